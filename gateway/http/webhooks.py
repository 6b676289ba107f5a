"""Provider webhooks: verify, parse, store (durable before the 2xx), answer later.

A wrong signature is refused before anything is read into storage; a malformed body is a 400
with the reason; storage down is a 503 so the provider retries instead of dropping.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from channels.base import (
    PayloadInvalid,
    RawRequest,
    StatusBatches,
    StatusCallbacks,
    unstorable_field,
)
from channels.telegram import ignored_update
from channels.whatsapp_cloud import WhatsAppCloudChannel
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import ADAPTERS, BACKPRESSURE, INBOX_WRITER, SESSIONS
from gateway.turns import delivery

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'

TELEGRAM_PATH = "/webhooks/telegram"
CLOUD_PATH = "/webhooks/whatsapp/cloud"
CLOUD = "whatsapp_cloud"

log = logging.getLogger("relaydesk.webhooks")


async def receive(request: web.Request, channel_name: str) -> int:
    """The shared path of every webhook; returns how many messages it held.

    The 2xx waits only for the inbox row (written with the other webhooks of the moment, one
    commit for all); the message is stored as such, and answered, in the background."""
    with request.app[BACKPRESSURE].ingest_request():
        body = await request.read()
        raw = RawRequest(request.method, str(request.url), dict(request.headers), body)
        channel = request.app[ADAPTERS][channel_name]
        channel.verify(raw)
        parsed = channel.parse(raw)
        for inbound in parsed:  # checked before any is stored: a refused request stores nothing
            why = unstorable_field(inbound)
            if why is not None:
                raise PayloadInvalid(why)
        await request.app[INBOX_WRITER].put(parsed, tenant=tenant_of(request))
        return len(parsed)


async def twilio_whatsapp(request: web.Request) -> web.Response:
    await receive(request, "whatsapp")
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")


def status_callback(channel_name: str) -> Handler:
    """The delivery status callback of a channel whose adapter reads them."""

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        raw = RawRequest(request.method, str(request.url), dict(request.headers), body)
        channel = request.app[ADAPTERS][channel_name]
        if not isinstance(channel, StatusCallbacks):
            raise web.HTTPNotFound()
        channel.verify(raw)
        sid, status, error_code = channel.parse_status(raw)
        async with request.app[SESSIONS].begin() as session:
            await delivery.apply_status(
                session, channel=channel_name, provider_id=sid, status=status, error_code=error_code
            )
        return web.Response(status=204)

    return handle


document(
    "POST",
    "/webhooks/twilio/status",
    "Twilio delivery status callback (only moves a message's status forward)",
    secured=False,
    responses={204: "applied or ignored", 400: "malformed", 403: "bad signature"},
)
document(
    "POST",
    "/webhooks/twilio/whatsapp",
    "Twilio WhatsApp inbound webhook (form-encoded, X-Twilio-Signature)",
    secured=False,
    responses={
        200: "committed to the inbox (empty TwiML)",
        400: "malformed",
        403: "bad signature",
    },
)


async def telegram(request: web.Request) -> web.Response:
    if not await receive(request, "telegram"):
        # Acknowledged so Telegram stops redelivering it; only the kind is logged, never content.
        ignored = ignored_update(await request.read())
        if ignored is not None:
            log.info(
                "telegram update ignored",
                extra={"fields": {"update_type": ignored.update_type, "reason": ignored.reason}},
            )
    return web.json_response({"ok": True})


document(
    "POST",
    TELEGRAM_PATH,
    "Telegram Bot API webhook (JSON Update, X-Telegram-Bot-Api-Secret-Token)",
    secured=False,
    responses={
        200: "committed to the inbox, or acknowledged without a message (update kinds and chats "
        "not handled)",
        400: "malformed",
        403: "missing or wrong secret token",
        413: "body too large",
    },
)


def _cloud(request: web.Request) -> WhatsAppCloudChannel:
    channel = request.app[ADAPTERS].get(CLOUD)
    if not isinstance(channel, WhatsAppCloudChannel):
        raise web.HTTPNotFound()
    return channel


async def whatsapp_cloud_subscription(request: web.Request) -> web.Response:
    """Meta's check of the callback URL: the challenge back, as text, for our verify token."""
    challenge = _cloud(request).subscription_challenge(request.query)
    return web.Response(text=challenge, content_type="text/plain")


async def whatsapp_cloud(request: web.Request) -> web.Response:
    """Messages held like every webhook's (`receive`: verified, parsed whole, then stored);
    the statuses of the same body applied after them; the rest acknowledged and logged."""
    channel = _cloud(request)
    await receive(request, CLOUD)
    raw = RawRequest(request.method, str(request.url), dict(request.headers), await request.read())
    await apply_statuses(request, CLOUD, channel, raw)
    for ignored in channel.read(raw).ignored:  # the kind and the reason, never content
        log.info(
            "whatsapp cloud notification ignored",
            extra={"fields": {"what": ignored.what, "reason": ignored.reason}},
        )
    return web.json_response({"ok": True})


async def apply_statuses(
    request: web.Request, channel_name: str, channel: StatusBatches, raw: RawRequest
) -> None:
    """Every delivery status of a verified request, in one transaction, each only forward."""
    statuses = channel.parse_statuses(raw)
    if not statuses:
        return
    async with request.app[SESSIONS].begin() as session:
        for provider_id, status, error_code in statuses:
            await delivery.apply_status(
                session,
                channel=channel_name,
                provider_id=provider_id,
                status=status,
                error_code=error_code,
            )


document(
    "GET",
    CLOUD_PATH,
    "WhatsApp Cloud API subscription check (hub.mode, hub.verify_token, hub.challenge)",
    secured=False,
    responses={200: "hub.challenge as text/plain", 403: "wrong or missing verify token"},
)
document(
    "POST",
    CLOUD_PATH,
    "WhatsApp Cloud API webhook (JSON, X-Hub-Signature-256): messages and delivery statuses",
    secured=False,
    responses={
        200: "messages committed to the inbox and statuses applied, or acknowledged without "
        "a message (fields, message types and other business numbers not handled)",
        400: "malformed",
        403: "missing or wrong signature",
        413: "body too large",
    },
)


def add_whatsapp_cloud_routes(app: web.Application) -> None:
    app.router.add_get(CLOUD_PATH, whatsapp_cloud_subscription)
    app.router.add_post(CLOUD_PATH, whatsapp_cloud)


def add_twilio_routes(app: web.Application) -> None:
    app.router.add_post("/webhooks/twilio/whatsapp", twilio_whatsapp)
    app.router.add_post("/webhooks/twilio/status", status_callback("whatsapp"))


def add_telegram_routes(app: web.Application) -> None:
    app.router.add_post(TELEGRAM_PATH, telegram)
