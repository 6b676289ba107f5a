"""WhatsApp through Twilio: signed form webhooks in, the Messages API out.

`verify` checks `X-Twilio-Signature` with the twilio library's `RequestValidator` against the
public URL Twilio called (so it is right behind a proxy); `parse` reads an inbound message,
keeping every parameter, known or not, or, on `STATUS_PATH` (the callback URL every send
names), a delivery status; `send` goes through the SDK's async client (no blocking call on
the event loop), splitting long bodies in order (`channels.splitting`). `typing` shows the
customer WhatsApp's typing indicator through Messaging v2's Typing Indicators resource (a
public beta), which also marks the customer's message read; `fetch_media` downloads what the
customer sent through the guarded fetcher (`MediaFetch`), the account's credentials sent to
Twilio's own hosts only (a media URL is what the webhook says, and Twilio's redirect to its
storage goes without them).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from urllib.parse import parse_qs, parse_qsl, urlsplit

import aiohttp
from multidict import MultiDict
from twilio.base import values
from twilio.base.exceptions import TwilioRestException
from twilio.http.async_http_client import AsyncTwilioHttpClient
from twilio.request_validator import (
    SIGNATURE_HEADER,
    SIGNATURE_SETTINGS_HEADER,
    RequestValidator,
    get_signature_algorithm,
)
from twilio.rest import Client

from channels.base import (
    DeliveryStatus,
    InboundMessage,
    Media,
    OutboundMessage,
    Parsed,
    PayloadInvalid,
    RawRequest,
    SendFailed,
    SendReference,
    SendResult,
    SignatureInvalid,
    Template,
    fetch_failed,
)
from channels.splitting import split_message
from channels.twilio_inbound import AUDIO_PLACEHOLDER, kind_of, media_of, text_of
from outbound import FetchError, FetchKind, HostCredentials, SafeFetcher

__all__ = [
    "AUDIO_PLACEHOLDER",
    "INBOUND_PATH",
    "MAX_BODY_CHARS",
    "STATUS_PATH",
    "TwilioWhatsAppChannel",
    "form_params",
]

# Where Twilio posts inbound messages, and the status callback every send asks for.
INBOUND_PATH = "/webhooks/twilio/whatsapp"
STATUS_PATH = "/webhooks/twilio/status"
# The query parameter of the status callback URL naming the reply and part it was sent for.
REFERENCE_PARAM = "reply"

# Twilio accepts up to 1600 characters per WhatsApp message body.
MAX_BODY_CHARS = 1600
# The typing indicator shows for 25 s or until the reply is sent: renewed a little before.
TYPING_REPEAT_S = 20.0
# A typing indicator that takes longer than this is not worth waiting for.
TYPING_TIMEOUT_S = 10.0
# The indicator names the customer's message: a Message (SM) or Media (MM) sid.
TYPING_MESSAGE_SID = re.compile(r"^(?:SM|MM)[0-9a-fA-F]{32}$")
# Twilio's API hosts (api.twilio.com and its regional edges), where media URLs point.
TWILIO_HOSTS = ("*.twilio.com",)


def form_params(body: bytes) -> MultiDict[str]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadInvalid("form body is not UTF-8") from exc
    try:
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text))
    except ValueError as exc:
        raise PayloadInvalid(f"body is not a form: {exc}") from exc
    return MultiDict(pairs)


def _content(template: Template) -> dict[str, object]:
    """The Content API fields of an approved template."""
    if not template.content_sid:
        raise SendFailed(
            f"WhatsApp template {template.name!r} has no content_sid for Twilio", retryable=False
        )
    return {
        "content_sid": template.content_sid,
        "content_variables": json.dumps(dict(template.variables), ensure_ascii=False),
    }


def _body(body: str, media_url: list[str]) -> dict[str, object]:
    """The fields of a free-form message: its text and attachments (either may be empty)."""
    return {"body": body or values.unset, "media_url": media_url or values.unset}


class TwilioWhatsAppChannel:
    name = "whatsapp"
    typing_repeat_s = TYPING_REPEAT_S

    def __init__(
        self,
        *,
        account_sid: str | None,
        auth_token: str | None,
        sender: str | None,
        public_url: str | None,
        api_base: str | None = None,
        clock: Callable[[], datetime],
        attempts: int = 4,
        base_delay_s: float = 0.5,
        fetcher: SafeFetcher | None = None,
    ) -> None:
        self._fetcher = fetcher
        self._account_sid = account_sid
        self._auth_token = auth_token
        self._sender = sender
        self._public_url = public_url.rstrip("/") if public_url else None
        self._api_base = api_base
        self._clock = clock
        self._attempts = attempts
        self._base_delay_s = base_delay_s
        self._client: Client | None = None
        self._status_callback = f"{self._public_url}{STATUS_PATH}" if self._public_url else None
        self._http: AsyncTwilioHttpClient | None = None

    # Inbound

    def signed_url(self, request: RawRequest) -> str:
        """The URL Twilio signed: our public URL plus the path and query it called."""
        if self._public_url is None:
            return request.url
        called = urlsplit(request.url)
        query = f"?{called.query}" if called.query else ""
        return f"{self._public_url}{called.path}{query}"

    def verify(self, request: RawRequest) -> None:
        if not self._auth_token:
            raise SignatureInvalid(
                "TWILIO_AUTH_TOKEN is not configured", reason="channel_not_configured"
            )
        signed_url = self.signed_url(request)
        signature = request.header(SIGNATURE_HEADER)
        if not signature:
            raise SignatureInvalid(f"missing {SIGNATURE_HEADER}", signed_url=signed_url)
        algorithm = get_signature_algorithm(request.header(SIGNATURE_SETTINGS_HEADER))
        content_type = (request.header("Content-Type") or "").split(";")[0].strip().lower()
        params: object
        if content_type == "application/json":
            # Twilio signs a JSON body through the URL's bodySHA256 only; without one the
            # validator would try to sign the body as form fields (a TypeError).
            if "bodySHA256" not in parse_qs(urlsplit(request.url).query):
                raise SignatureInvalid(
                    "a JSON webhook must carry bodySHA256 in its URL", signed_url=signed_url
                )
            params = request.body.decode("utf-8", errors="replace")
        else:
            params = form_params(request.body)
        validator = RequestValidator(self._auth_token)
        if not validator.validate(signed_url, params, signature, algorithm):
            raise SignatureInvalid("X-Twilio-Signature does not match", signed_url=signed_url)

    def parse_status(self, request: RawRequest) -> DeliveryStatus:
        """A status callback, with the reply and part its URL names (`_callback`)."""
        params = form_params(request.body)
        sid = params.get("MessageSid") or params.get("SmsSid")
        status = params.get("MessageStatus") or params.get("SmsStatus")
        if not sid or not status:
            raise PayloadInvalid("MessageSid and MessageStatus are required")
        references = parse_qs(urlsplit(request.url).query).get(REFERENCE_PARAM, [])
        named = SendReference.read(references[0]) if len(references) == 1 else None
        reference, part = named if named is not None else (None, 0)
        return DeliveryStatus(sid, status, params.get("ErrorCode") or None, reference, part)

    def parse(self, request: RawRequest) -> Parsed:
        """A status callback on `STATUS_PATH`, an inbound message anywhere else."""
        if urlsplit(request.url).path == STATUS_PATH:
            return Parsed(statuses=(self.parse_status(request),))
        return Parsed(messages=(self._message(request),))

    def _message(self, request: RawRequest) -> InboundMessage:
        params = form_params(request.body)
        sid = params.get("MessageSid") or params.get("SmsMessageSid") or params.get("SmsSid")
        sender = params.get("From")
        if not sid:
            raise PayloadInvalid("MessageSid is missing")
        if not sender:
            raise PayloadInvalid("From is missing")
        media = media_of(params)
        kind = kind_of(params, media)
        return InboundMessage(
            channel="whatsapp",
            provider_message_id=sid,
            sender=sender,
            text=text_of(params, kind, media),
            received_at=self._clock(),
            kind=kind,
            sender_name=params.get("ProfileName") or None,
            media=media,
            reply_to_provider_id=params.get("OriginalRepliedMessageSid") or None,
            # Every parameter is kept (new ones included), the last value of a repeat —
            # but the body only once, as the message text (which is redacted on storing).
            extra={key: params.getall(key)[-1] for key in params if key != "Body"},
        )

    # Outbound

    def _rest(self) -> Client:
        if self._client is None:
            if not (self._account_sid and self._auth_token and self._sender):
                raise SendFailed("Twilio is not configured", retryable=False)
            self._http = AsyncTwilioHttpClient(timeout=30)
            self._client = Client(self._account_sid, self._auth_token, http_client=self._http)
            if self._api_base:
                # Each Twilio domain has its own host: both used here go to the one base.
                self._client.api.base_url = self._api_base
                self._client.messaging.base_url = self._api_base
        return self._client

    async def send(self, message: OutboundMessage) -> SendResult:
        client = self._rest()
        recipient = message.recipient
        if not recipient.startswith("whatsapp:"):
            recipient = f"whatsapp:{recipient}"
        if message.template is not None:
            # A template (Content API) is one message: its content stays at Twilio.
            content = _content(message.template)
            callback = self._callback(message, 0)
            return SendResult(
                provider_message_ids=(await self._create(client, recipient, content, callback),)
            )
        sids: list[str] = []
        parts = split_message(message.text, MAX_BODY_CHARS)
        # WhatsApp takes one attachment per message: the first goes with the first part of
        # the text (or its caption when there is no text), each further one as a message of
        # its own with its caption.
        media = message.media
        if media and not parts:
            parts = [media[0].caption or ""]
        for index, part in enumerate(parts):
            urls = [media[0].url] if media and index == 0 else []
            callback = self._callback(message, len(sids))
            sids.append(await self._create(client, recipient, _body(part, urls), callback))
        for item in media[1:]:
            body = _body(item.caption or "", [item.url])
            sids.append(
                await self._create(client, recipient, body, self._callback(message, len(sids)))
            )
        return SendResult(provider_message_ids=tuple(sids))

    def _callback(self, message: OutboundMessage, part: int) -> str | None:
        """The status callback URL of one part: ours, naming the reply and the part (Twilio
        signs the whole URL, query included, so the reference cannot be forged)."""
        if self._status_callback is None or message.reference is None:
            return self._status_callback
        return f"{self._status_callback}?{REFERENCE_PARAM}={message.reference.token(part)}"

    async def _create(
        self, client: Client, to: str, content: Mapping[str, object], callback: str | None
    ) -> str:
        """Create one message: `content` is its `body` and `media_url`, or a template's
        `content_sid` and `content_variables`; `callback` its status callback URL."""
        for attempt in range(1, self._attempts + 1):
            try:
                created = await client.messages.create_async(
                    to=to,
                    from_=self._sender,
                    status_callback=callback or values.unset,
                    **content,
                )
                return str(created.sid)
            except TwilioRestException as exc:
                retryable = exc.status == 429 or exc.status >= 500
                if not retryable or attempt == self._attempts:
                    raise SendFailed(
                        f"Twilio answered {exc.status}: {exc.msg}",
                        retryable=retryable,
                        code=str(exc.code) if exc.code is not None else None,
                    ) from exc
            except (OSError, TimeoutError) as exc:
                if attempt == self._attempts:
                    raise SendFailed(f"Twilio unreachable: {exc}", retryable=True) from exc
            delay = min(8.0, self._base_delay_s * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(0, delay))
        raise SendFailed("unreachable", retryable=True)  # the loop always returns or raises

    async def typing(self, recipient: str, reply_to: str | None) -> None:
        """WhatsApp's typing indicator on the customer's message `reply_to` (and that message
        marked read); nothing for a `reply_to` that is not a message sid. One attempt."""
        if reply_to is None or not TYPING_MESSAGE_SID.fullmatch(reply_to):
            return
        client = self._rest()
        try:
            async with asyncio.timeout(TYPING_TIMEOUT_S):
                shown = await client.messaging.v2.typing_indicator.create_async(
                    channel="whatsapp", message_id=reply_to
                )
        except TwilioRestException as exc:
            raise SendFailed(
                f"Twilio refused the typing indicator ({exc.status}): {exc.msg}",
                retryable=exc.status == 429 or exc.status >= 500,
            ) from exc
        except (OSError, TimeoutError, aiohttp.ClientError) as exc:
            reason = str(exc) or type(exc).__name__
            raise SendFailed(f"Twilio unreachable: {reason}", retryable=True) from exc
        if shown.success is not True:
            raise SendFailed("Twilio did not show the typing indicator", retryable=True)

    async def fetch_media(self, media: Media, kind: FetchKind) -> tuple[bytes, str]:
        """Download a media item Twilio received (its URLs need the account credentials)."""
        if self._fetcher is None or not (self._account_sid and self._auth_token):
            raise SendFailed("Twilio media cannot be fetched: not configured", retryable=False)
        credentials = HostCredentials.basic(
            self._account_sid, self._auth_token, self._credential_hosts()
        )
        try:
            fetched = await self._fetcher.get(media.url, kind=kind, credentials=credentials)
        except FetchError as exc:
            raise fetch_failed("Twilio media", exc) from exc
        return fetched.body, media.content_type or fetched.content_type or "audio/ogg"

    def _credential_hosts(self) -> tuple[str, ...]:
        """Twilio's hosts, and the host of a `TWILIO_API_BASE` standing in for them."""
        base_host = urlsplit(self._api_base).hostname if self._api_base else None
        return TWILIO_HOSTS + ((base_host,) if base_host else ())

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
