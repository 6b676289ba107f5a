"""How each channel of the catalog (`gateway.channel_catalog`) is wired into the app: the
adapter that verifies, parses and sends (none for phone calls: they arrive as finished
transcripts and are never answered) and the routes it needs. Only `gateway.app` reads this;
everything else reads the catalog, which imports no adapter and no route.
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
from gateway.http import webhooks
from gateway.runtime.clock import utcnow
from gateway.webchat import page, routes
from gateway.webchat.hub import WebChatHub
from identity.channels import ChannelName
from outbound import SafeFetcher


@dataclass(frozen=True, slots=True)
class AdapterDeps:
    """What adapters are built from: settings, the shared HTTP client, the web chat hub, and
    the guarded fetcher of the URLs they download (`outbound`)."""

    settings: Settings
    http: httpx.AsyncClient
    hub: WebChatHub
    fetcher: SafeFetcher


@dataclass(frozen=True, slots=True)
class ChannelWiring:
    name: ChannelName
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
        fetcher=deps.fetcher,
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
        fetcher=deps.fetcher,
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


WIRING: Final[tuple[ChannelWiring, ...]] = (
    ChannelWiring(
        "whatsapp",
        _twilio_whatsapp,
        webhooks.routes(webhooks.TWILIO_WHATSAPP, webhooks.TWILIO_STATUS),
    ),
    ChannelWiring(
        "whatsapp_cloud",
        _whatsapp_cloud,
        webhooks.routes(webhooks.WHATSAPP_CLOUD, subscription_check=True),
    ),
    ChannelWiring("telegram", _telegram, webhooks.routes(webhooks.TELEGRAM)),
    ChannelWiring("webchat", _webchat, _webchat_routes),
    ChannelWiring("phone", None, transcripts.add_routes),
)


def build_adapters(deps: AdapterDeps) -> dict[str, Channel]:
    """One adapter per channel that has one, keyed by channel name."""
    return {w.name: w.adapter(deps) for w in WIRING if w.adapter is not None}


async def close_adapters(adapters: Mapping[str, Channel]) -> None:
    for adapter in adapters.values():
        close = getattr(adapter, "close", None)
        if close is not None:
            await close()


def add_channel_routes(app: web.Application) -> None:
    for w in WIRING:
        if w.routes is not None:
            w.routes(app)
