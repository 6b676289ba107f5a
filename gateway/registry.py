"""The channels Relaydesk speaks, each registered once.

An entry names the channel (the name stored on its messages and episodes), the rule that turns
what its sender claims into identity evidence, the adapter that verifies, parses and sends
(none for phone calls: they arrive as finished transcripts and are never answered), and the
routes it needs. The webhook routes, the identity evidence of stored messages, `/v1/context`
and delivery all read this table. Adding a channel: its adapter module in `channels/`, an
evidence rule in `gateway.customers.evidence` if no existing one fits, and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import httpx
from aiohttp import web
from pydantic import SecretStr

from channels.base import Channel
from channels.telegram import TelegramChannel
from channels.twilio_whatsapp import TwilioWhatsAppChannel
from channels.webchat import WebChatChannel
from channels.whatsapp_cloud import WhatsAppCloudChannel
from gateway.api import transcripts
from gateway.config import Settings
from gateway.customers.evidence import (
    EvidenceRule,
    phone_caller,
    telegram_sender,
    webchat_visitor,
    whatsapp_sender,
)
from gateway.http import webhooks
from gateway.runtime.clock import utcnow
from gateway.webchat import page, routes
from gateway.webchat.hub import WebChatHub


@dataclass(frozen=True, slots=True)
class AdapterDeps:
    """What adapters are built from: settings, the shared HTTP client, the web chat hub."""

    settings: Settings
    http: httpx.AsyncClient
    hub: WebChatHub


@dataclass(frozen=True, slots=True)
class ChannelEntry:
    name: str
    evidence: EvidenceRule
    # The external-id prefix a `/v1/context` caller may write before the channel's own id.
    context_prefix: str = ""
    adapter: Callable[[AdapterDeps], Channel] | None = None
    routes: Callable[[web.Application], None] | None = None


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _twilio_whatsapp(deps: AdapterDeps) -> Channel:
    settings = deps.settings
    return TwilioWhatsAppChannel(
        account_sid=settings.twilio_account_sid,
        auth_token=_secret(settings.twilio_auth_token),
        sender=settings.twilio_whatsapp_from,
        public_url=settings.public_url,
        api_base=settings.twilio_api_base,
        clock=utcnow,
        http=deps.http,
    )


def _whatsapp_cloud(deps: AdapterDeps) -> Channel:
    settings = deps.settings
    return WhatsAppCloudChannel(
        api_base=settings.whatsapp_cloud_api_base,
        verify_token=_secret(settings.whatsapp_cloud_verify_token),
        app_secret=_secret(settings.whatsapp_cloud_app_secret),
        access_token=_secret(settings.whatsapp_cloud_access_token),
        phone_number_id=settings.whatsapp_cloud_phone_number_id,
        http=deps.http,
        clock=utcnow,
    )


def _telegram(deps: AdapterDeps) -> Channel:
    settings = deps.settings
    return TelegramChannel(
        token=_secret(settings.telegram_bot_token),
        webhook_secret=_secret(settings.telegram_webhook_secret),
        api_base=settings.telegram_api_base,
        clock=utcnow,
    )


def _webchat(deps: AdapterDeps) -> Channel:
    return WebChatChannel(deps.hub.deliver, utcnow, send_frame=deps.hub.send_frame)


def _webchat_routes(app: web.Application) -> None:
    routes.add_routes(app)
    page.add_routes(app)


CHANNELS: Final[tuple[ChannelEntry, ...]] = (
    ChannelEntry("whatsapp", whatsapp_sender, "", _twilio_whatsapp, webhooks.add_twilio_routes),
    # The Cloud API's sender is `whatsapp:+E164` too: the same identity as through Twilio, on a
    # channel of its own so that replies go back through the provider the customer wrote to.
    ChannelEntry(
        "whatsapp_cloud",
        whatsapp_sender,
        "",
        _whatsapp_cloud,
        webhooks.add_whatsapp_cloud_routes,
    ),
    ChannelEntry("telegram", telegram_sender, "telegram:", _telegram, webhooks.add_telegram_routes),
    ChannelEntry("webchat", webchat_visitor, "web:anon:", _webchat, _webchat_routes),
    ChannelEntry("phone", phone_caller, "phone:", None, transcripts.add_routes),
)
BY_NAME: Final[Mapping[str, ChannelEntry]] = {entry.name: entry for entry in CHANNELS}
NAMES: Final[tuple[str, ...]] = tuple(BY_NAME)


def entry(name: str) -> ChannelEntry:
    """The registered channel `name`; `KeyError` for one that is not."""
    return BY_NAME[name]


def build_adapters(deps: AdapterDeps) -> dict[str, Channel]:
    """One adapter per channel that has one, keyed by channel name."""
    return {e.name: e.adapter(deps) for e in CHANNELS if e.adapter is not None}


async def close_adapters(adapters: Mapping[str, Channel]) -> None:
    for adapter in adapters.values():
        close = getattr(adapter, "close", None)
        if close is not None:
            await close()


def add_channel_routes(app: web.Application) -> None:
    for e in CHANNELS:
        if e.routes is not None:
            e.routes(app)
