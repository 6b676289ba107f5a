"""WhatsApp through Meta's Cloud API: signed JSON webhooks in, the Graph API out (httpx).

`subscription_challenge` answers Meta's webhook check (`hub.verify_token`) and `verify` checks
`X-Hub-Signature-256`, both through `channels.meta_webhooks`; `parse` reads one body once
(`channels.whatsapp_cloud_payload`): its messages, statuses and ignored items. `send` posts
to `/{phone_number_id}/messages`: text split at 4096 characters, attachments uploaded first
(`/{phone_number_id}/media`), or an approved template; transient Graph errors are retried with
jittered backoff. `typing` marks the customer's message read and shows the typing indicator;
`fetch_media` downloads a received attachment (for voice notes).

Files are fetched through the guarded fetcher (`outbound`), never the Graph client: an
attachment's URL (a reply's or an operator's) without credentials, a received attachment's
URL (the one its media object names) with the access token, sent to the Graph API's host and
Meta's media host only.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from channels import meta_webhooks
from channels.base import (
    Choice,
    DeliveryStatus,
    Ignored,
    Media,
    OutboundMessage,
    Parsed,
    RawRequest,
    SendFailed,
    SendResult,
    SignatureInvalid,
    Template,
    fetch_failed,
)
from channels.meta_webhooks import SIGNATURE_HEADER
from channels.splitting import split_message
from channels.whatsapp_cloud_payload import CHANNEL, read_notification
from outbound import Fetched, FetchError, FetchKind, HostCredentials, SafeFetcher

__all__ = [
    "MAX_TEXT_CHARS",
    "SIGNATURE_HEADER",
    "DeliveryStatus",
    "Ignored",
    "WhatsAppCloudChannel",
    "graph_failure",
]

# A text message's body takes at most 4096 characters.
MAX_TEXT_CHARS = 4096
# Meta's limits for an interactive list: the body, the button that opens it (20), a row's
# title (24) and id (200), ten rows. The button's words are language-neutral.
LIST_BODY_CHARS = 4096
LIST_BUTTON = "1 – 5"
LIST_TITLE_CHARS = 24
LIST_ID_CHARS = 200
LIST_ROWS = 10
# The typing indicator shows for up to 25 s or until the reply: renewed a little before.
TYPING_REPEAT_S = 20.0
TYPING_TIMEOUT_S = 10.0
SEND_TIMEOUT_S = 30.0
# Graph error codes that mean "slow down / try again", whatever the HTTP status: 1 and 2
# (temporary), 4 (app rate limit), 80007 (account rate limit), 130429 (throughput),
# 131056 (too many messages to one number).
THROTTLED_CODES = frozenset({1, 2, 4, 80007, 130429, 131056})
# What an attachment's content type is sent as (anything else goes as a document).
MEDIA_TYPES = ("image", "video", "audio")
# Where a media object's URL points (`https://lookaside.fbsbx.com/whatsapp_business/…`): the
# download needs the access token there too.
META_MEDIA_HOSTS = ("lookaside.fbsbx.com",)


def graph_failure(status: int, body: object, retry_after: str | None = None) -> SendFailed:
    """The `SendFailed` of a Graph error answer `{"error": {"message", "type", "code", …}}`."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    code = error.get("code")
    message = error.get("message") or f"HTTP {status}"
    subcode = error.get("error_subcode")
    detail = f" (subcode {subcode})" if subcode is not None else ""
    retryable = status == 429 or status >= 500 or code in THROTTLED_CODES
    wait = None
    if retry_after is not None:
        try:
            wait = float(retry_after)
        except ValueError:
            wait = None
    return SendFailed(
        f"Graph API answered {status}: {message}{detail}",
        retryable=retryable,
        retry_after_s=wait,
        code=str(code) if code is not None else None,
    )


class WhatsAppCloudChannel:
    name = CHANNEL
    typing_repeat_s = TYPING_REPEAT_S

    def __init__(
        self,
        *,
        api_base: str,
        verify_token: str | None,
        app_secret: str | None,
        access_token: str | None,
        phone_number_id: str | None,
        http: httpx.AsyncClient,
        clock: Callable[[], datetime],
        fetcher: SafeFetcher | None = None,
        attempts: int = 4,
        base_delay_s: float = 0.5,
    ) -> None:
        self._api_base = api_base.rstrip("/")
        self._fetcher = fetcher
        self._verify_token = verify_token
        self._app_secret = app_secret
        self._access_token = access_token
        self._phone_number_id = phone_number_id
        self._http = http
        self._clock = clock
        self._attempts = attempts
        self._base_delay_s = base_delay_s

    # Inbound

    def subscription_challenge(self, query: Mapping[str, str]) -> str:
        """The `hub.challenge` to answer Meta's subscription check with; `SignatureInvalid`
        (403) unless `hub.mode` is subscribe and `hub.verify_token` is ours."""
        if not self._verify_token:
            raise SignatureInvalid(
                "WHATSAPP_CLOUD_VERIFY_TOKEN is not configured", reason="channel_not_configured"
            )
        return meta_webhooks.subscription_challenge(query, self._verify_token)

    def verify(self, request: RawRequest) -> None:
        if not self._app_secret:
            raise SignatureInvalid(
                "WHATSAPP_CLOUD_APP_SECRET is not configured", reason="channel_not_configured"
            )
        meta_webhooks.verify_signature(
            request.header(SIGNATURE_HEADER), request.body, self._app_secret
        )

    def parse(self, request: RawRequest) -> Parsed:
        """Everything in a verified body; `PayloadInvalid` when it is malformed."""
        return read_notification(
            request.body,
            received_at=self._clock(),
            media_base=self._api_base,
            phone_number_id=self._phone_number_id,
        )

    # Outbound

    def _headers(self) -> dict[str, str]:
        if not (self._access_token and self._phone_number_id):
            raise SendFailed("the WhatsApp Cloud API is not configured", retryable=False)
        return {"Authorization": f"Bearer {self._access_token}"}

    async def send(self, message: OutboundMessage) -> SendResult:
        headers = self._headers()
        to = message.recipient.removeprefix("whatsapp:").lstrip("+")
        context = (
            {"context": {"message_id": message.reply_to}}
            if message.reply_to and message.reply_to.startswith("wamid.")
            else {}
        )
        if message.template is not None:
            body = {**_envelope(to), **_reference(message, 0), **_template(message.template)}
            return SendResult((await self._post_message(headers, body),))
        ids: list[str] = []
        parts = split_message(message.text, MAX_TEXT_CHARS)
        for index, part in enumerate(parts):
            quote = {} if ids else context  # only the first message quotes the customer's
            text = {"type": "text", "text": {"body": part}}
            if message.choices and index == len(parts) - 1:
                text = _choice_list(part, message.choices)
            envelope = {**_envelope(to), **_reference(message, len(ids))}
            ids.append(await self._post_message(headers, {**envelope, **quote, **text}))
        for media in message.media:  # each uploaded just before it is sent
            content = await self._attachment(headers, media)
            quote = {} if ids else context
            envelope = {**_envelope(to), **_reference(message, len(ids))}
            ids.append(await self._post_message(headers, {**envelope, **quote, **content}))
        return SendResult(tuple(ids))

    async def _post_message(self, headers: Mapping[str, str], body: dict[str, Any]) -> str:
        answer = await self._request(
            "POST", f"/{self._phone_number_id}/messages", headers=headers, json=body
        )
        sent = answer.get("messages")
        if not (
            isinstance(sent, list) and sent and isinstance(sent[0], dict) and sent[0].get("id")
        ):
            raise SendFailed("Graph API answered without a message id", retryable=False)
        return str(sent[0]["id"])

    async def _attachment(self, headers: Mapping[str, str], media: Media) -> dict[str, Any]:
        """`{"type": …, <type>: {"id", "caption"}}` for `media`, uploaded to Meta first."""
        data, content_type = await self._download(media)
        kind = next((t for t in MEDIA_TYPES if content_type.startswith(f"{t}/")), "document")
        filename = media.filename or media.url.rsplit("/", 1)[-1].split("?")[0] or "attachment"
        uploaded = await self._request(
            "POST",
            f"/{self._phone_number_id}/media",
            headers=headers,
            data={"messaging_product": "whatsapp", "type": content_type},
            files={"file": (filename, data, content_type)},
        )
        media_id = uploaded.get("id")
        if not media_id:
            raise SendFailed("Graph API answered an upload without a media id", retryable=False)
        part: dict[str, str] = {"id": str(media_id)}
        if media.caption and kind != "audio":  # audio takes no caption
            part["caption"] = media.caption
        if kind == "document":
            part["filename"] = filename
        return {"type": kind, kind: part}

    async def _download(self, media: Media) -> tuple[bytes, str]:
        fetched = await self._fetch(media.url, FetchKind.ATTACHMENT, None, "attachment")
        content_type = media.content_type or fetched.content_type or ""
        return fetched.body, content_type.split(";")[0].strip() or "application/octet-stream"

    async def _fetch(
        self, url: str, kind: FetchKind, credentials: HostCredentials | None, what: str
    ) -> Fetched:
        if self._fetcher is None:
            raise SendFailed(f"{what} cannot be fetched: no fetcher", retryable=False)
        try:
            return await self._fetcher.get(url, kind=kind, credentials=credentials)
        except FetchError as exc:
            raise fetch_failed(what, exc) from exc

    async def _request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One Graph call, retried on transient failures (bounded, jittered backoff)."""
        for attempt in range(1, self._attempts + 1):
            try:
                return await self._once(method, path, **kwargs)
            except SendFailed as exc:
                if not exc.retryable or attempt == self._attempts:
                    raise
                delay = exc.retry_after_s or min(8.0, self._base_delay_s * 2 ** (attempt - 1))
                await asyncio.sleep(random.uniform(0, delay))
        raise SendFailed("unreachable", retryable=True)  # the loop always returns or raises

    async def _once(
        self, method: str, path: str, *, timeout: float = SEND_TIMEOUT_S, **kwargs: Any
    ) -> dict[str, Any]:
        try:
            response = await self._http.request(
                method, f"{self._api_base}{path}", timeout=timeout, **kwargs
            )
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise SendFailed(f"Graph API unreachable: {reason}", retryable=True) from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400 or not isinstance(body, dict) or "error" in body:
            raise graph_failure(response.status_code, body, response.headers.get("Retry-After"))
        return body

    async def typing(self, recipient: str, reply_to: str | None) -> None:
        """Mark the customer's message `reply_to` read and show the typing indicator on it;
        nothing for a `reply_to` that is not a wamid. One attempt."""
        if reply_to is None or not reply_to.startswith("wamid."):
            return
        body = {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": reply_to,
            "typing_indicator": {"type": "text"},
        }
        await self._once(
            "POST",
            f"/{self._phone_number_id}/messages",
            headers=self._headers(),
            json=body,
            timeout=TYPING_TIMEOUT_S,
        )

    async def fetch_media(self, media: Media, kind: FetchKind) -> tuple[bytes, str]:
        """Download a received attachment: its media object (`GET /{media-id}`) names a URL,
        fetched with the same bearer token."""
        headers = self._headers()
        media_id = media.media_id or media.url.rstrip("/").rsplit("/", 1)[-1]
        if not media_id.isdigit():
            raise SendFailed(f"not a Cloud API media id: {media_id!r}", retryable=False)
        found = await self._once("GET", f"/{media_id}", headers=headers)
        url = found.get("url")
        if not isinstance(url, str) or not url:
            raise SendFailed("the media object has no url", retryable=False)
        graph_host = urlsplit(self._api_base).hostname or ""
        credentials = HostCredentials.bearer(
            self._access_token or "", (graph_host, *META_MEDIA_HOSTS)
        )
        fetched = await self._fetch(url, kind, credentials, "Cloud API media")
        mime = found.get("mime_type")
        content_type = media.content_type or (mime if isinstance(mime, str) else None)
        return fetched.body, content_type or fetched.content_type or ""


def _envelope(to: str) -> dict[str, Any]:
    return {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to}


def _choice_list(body: str, choices: tuple[Choice, ...]) -> dict[str, Any]:
    """An interactive list message (reply buttons allow only three choices): a row per
    choice, its id the payload Meta sends back (`interactive.list_reply.id`)."""
    rows = [
        {
            "id": choice.payload[:LIST_ID_CHARS],
            "title": choice.title[:LIST_TITLE_CHARS],
            **({"description": choice.description[:72]} if choice.description else {}),
        }
        for choice in choices[:LIST_ROWS]
    ]
    return {
        "type": "interactive",
        "interactive": {
            "type": "list",
            "body": {"text": body[:LIST_BODY_CHARS]},
            "action": {"button": LIST_BUTTON, "sections": [{"title": LIST_BUTTON, "rows": rows}]},
        },
    }


def _template(template: Template) -> dict[str, Any]:
    if not template.language:
        raise SendFailed(f"template {template.name!r} has no language", retryable=False)
    body: dict[str, Any] = {"name": template.name, "language": {"code": template.language}}
    if template.variables:
        parameters = [
            {"type": "text", "text": template.variables[key]}
            for key in sorted(template.variables, key=_variable_order)
        ]
        body["components"] = [{"type": "body", "parameters": parameters}]
    return {"type": "template", "template": body}


def _variable_order(key: str) -> tuple[int, str]:
    """ "1", "2", …, "10" in number order (names that are not numbers after them)."""
    return (int(key), "") if key.isdigit() else (1 << 30, key)


def _reference(message: OutboundMessage, part: int) -> dict[str, str]:
    """Meta echoes `biz_opaque_callback_data` in the message's status webhooks: the reply and
    part it was sent for (`SendReference`)."""
    if message.reference is None:
        return {}
    return {"biz_opaque_callback_data": message.reference.token(part)}
