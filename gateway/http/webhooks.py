"""Provider webhooks: verify, parse, store (durable before the 2xx), answer later.

Every provider's POST takes the same path (`receive`): the channel's adapter verifies the
request (a wrong signature or secret is refused before anything is stored) and parses it once
into its messages, delivery statuses and ignored items; the messages, all checked storable
first, are committed to the inbox, the statuses applied (each only forward), the ignored items
logged (their kind and reason, never content), and only then the provider's 2xx. A malformed
body is a 400 with the reason; storage down is a 503 so the provider retries instead of
dropping. What differs per provider is data: a `Webhook` (path, channel, the 2xx it expects,
how its ignored items are logged, the one media type it posts).

Checks run cheapest first and before anything is trusted: a body in another format than the
provider posts is a 415 before its signature is looked at (a form signature cannot even be
computed over JSON), then the signature, then the body (400 when malformed or nested too deep).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from aiohttp import web

from channels.base import (
    DeliveryStatus,
    Ignored,
    Parsed,
    PayloadInvalid,
    RawRequest,
    unstorable_field,
)
from channels.meta_webhooks import SubscriptionCheck
from channels.telegram import SECRET_HEADER as TELEGRAM_SECRET_HEADER
from channels.telegram_updates import webhook_answer as telegram_webhook_answer
from channels.twilio_whatsapp import INBOUND_PATH as TWILIO_INBOUND_PATH
from channels.twilio_whatsapp import STATUS_PATH as TWILIO_STATUS_PATH
from gateway.http.errors import UnsupportedMediaType
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import ADAPTERS, BACKPRESSURE, INBOX_WRITER, SESSIONS
from gateway.turns import delivery
from identity.channels import ChannelName

EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"

TELEGRAM_PATH = "/webhooks/telegram"
CLOUD_PATH = "/webhooks/whatsapp/cloud"

log = logging.getLogger("relaydesk.webhooks")


def _twiml(_: Parsed) -> web.Response:
    return web.Response(text=EMPTY_TWIML, content_type="text/xml")


def _no_content(_: Parsed) -> web.Response:
    return web.Response(status=204)


def _ok_json(_: Parsed) -> web.Response:
    return web.json_response({"ok": True})


def _telegram_answer(parsed: Parsed) -> web.Response:
    return web.json_response(telegram_webhook_answer(parsed.messages))


@dataclass(frozen=True, slots=True)
class Webhook:
    """One provider endpoint: where it is posted, whose adapter reads it, the media type its
    bodies have, the 2xx the provider expects, and the log line (message, field naming the
    item) of each ignored item."""

    path: str
    channel: ChannelName
    media_type: str
    answer: Callable[[Parsed], web.Response]
    ignored_message: str = "webhook item ignored"
    ignored_field: str = "what"


TWILIO_WHATSAPP: Final = Webhook(TWILIO_INBOUND_PATH, "whatsapp", FORM, _twiml)
TWILIO_STATUS: Final = Webhook(TWILIO_STATUS_PATH, "whatsapp", FORM, _no_content)
TELEGRAM: Final = Webhook(
    TELEGRAM_PATH,
    "telegram",
    JSON,
    _telegram_answer,
    ignored_message="telegram update ignored",
    ignored_field="update_type",
)
WHATSAPP_CLOUD: Final = Webhook(
    CLOUD_PATH,
    "whatsapp_cloud",
    JSON,
    _ok_json,
    ignored_message="whatsapp cloud notification ignored",
)


async def receive(request: web.Request, hook: Webhook) -> web.Response:
    """The one path of every provider webhook.

    The 2xx waits only for the inbox rows (written with the other webhooks of the moment, one
    commit for all); the messages are stored as such, and answered, in the background."""
    channel = request.app[ADAPTERS].get(hook.channel)
    if channel is None:
        raise web.HTTPNotFound()
    if request.content_type != hook.media_type:
        raise UnsupportedMediaType(
            f"this webhook takes {hook.media_type}, not {request.content_type}"
        )
    with request.app[BACKPRESSURE].ingest_request():
        body = await request.read()
        raw = RawRequest(request.method, str(request.url), dict(request.headers), body)
        channel.verify(raw)
        parsed = channel.parse(raw)
        for inbound in parsed.messages:  # all checked first: a refused request stores nothing
            why = unstorable_field(inbound)
            if why is not None:
                raise PayloadInvalid(why)
        await request.app[INBOX_WRITER].put(parsed.messages, tenant=tenant_of(request))
    await apply_statuses(request, hook.channel, parsed.statuses)
    _log_ignored(hook, parsed.ignored)
    return hook.answer(parsed)


async def apply_statuses(
    request: web.Request, channel: ChannelName, statuses: Sequence[DeliveryStatus]
) -> None:
    """Every delivery status of a verified request, in one transaction, each only forward."""
    if not statuses:
        return
    async with request.app[SESSIONS].begin() as session:
        for status in statuses:
            await delivery.apply_status(
                session,
                channel=channel,
                provider_id=status.provider_message_id,
                status=status.status,
                error_code=status.error_code,
                reference=status.reference,
                part=status.part,
            )


def _log_ignored(hook: Webhook, ignored: Sequence[Ignored]) -> None:
    # Acknowledged so the provider stops redelivering it; only the kind is logged, never content.
    for item in ignored:
        log.info(
            hook.ignored_message,
            extra={"fields": {hook.ignored_field: item.what, "reason": item.reason}},
        )


async def subscription(request: web.Request, hook: Webhook) -> web.Response:
    """Meta's check of the callback URL: the challenge back, as text, for our verify token."""
    channel = request.app[ADAPTERS].get(hook.channel)
    if not isinstance(channel, SubscriptionCheck):
        raise web.HTTPNotFound()
    challenge = channel.subscription_challenge(request.query)
    return web.Response(text=challenge, content_type="text/plain")


def routes(*hooks: Webhook, subscription_check: bool = False) -> Callable[[web.Application], None]:
    """What adds `hooks`' POST routes (and, for a Meta webhook, its GET subscription check)."""

    def add(app: web.Application) -> None:
        for hook in hooks:
            app.router.add_post(hook.path, _handler(receive, hook))
            if subscription_check:
                app.router.add_get(hook.path, _handler(subscription, hook))

    return add


def _handler(
    handle: Callable[[web.Request, Webhook], Awaitable[web.Response]], hook: Webhook
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        return await handle(request, hook)

    return handler


document(
    "POST",
    TWILIO_STATUS_PATH,
    "Twilio delivery status callback (only moves a message's status forward)",
    secured=False,
    responses={
        204: "applied or ignored",
        400: "malformed",
        403: "bad signature",
        415: "not form-encoded",
    },
)
document(
    "POST",
    TWILIO_INBOUND_PATH,
    "Twilio WhatsApp inbound webhook (form-encoded, X-Twilio-Signature)",
    secured=False,
    responses={
        200: "committed to the inbox (empty TwiML)",
        400: "malformed",
        403: "bad signature",
        415: "not form-encoded",
    },
)
document(
    "POST",
    TELEGRAM_PATH,
    f"Telegram Bot API webhook (JSON Update, {TELEGRAM_SECRET_HEADER})",
    secured=False,
    responses={
        200: "committed to the inbox, or acknowledged without a message (update kinds and chats "
        "not handled)",
        400: "malformed or nested too deep",
        403: "missing or wrong secret token",
        413: "body too large",
        415: "not JSON",
    },
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
        400: "malformed or nested too deep",
        403: "missing or wrong signature",
        413: "body too large",
        415: "not JSON",
    },
)
