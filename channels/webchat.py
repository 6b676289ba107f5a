"""Web chat: the widget's REST body and websocket frames; replies go to a delivery sink, the
typing signal and reply previews to a frame sink (both the hub of open sockets, in the gateway).

Frames to the visitor's sockets, besides the stored reply (`deliver`):

    {"type": "typing", "reply_to": <client_message_id>}
        a reply to that message is being written (the widget shows it for a few seconds)
    {"type": "partial", "reply_to": <client_message_id>, "text": <the whole reply so far>}
        the reply as written so far: never stored, replaced by the next partial (which may be
        shorter: a retried model call) and by the stored reply (`message` with that reply_to)

`reply_to` is the visitor's own `client_message_id` of the message answered (what follows the
visitor id in its `provider_message_id`), or null when unknown.

There is no provider signature here: the visitor id is a random, unguessable value the widget
keeps, and who the visitor *is* comes only from the optional identity token (verified by the
identity rules, never here).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Final

from channels.base import (
    InboundMessage,
    OutboundMessage,
    Parsed,
    PayloadInvalid,
    RawRequest,
    SendResult,
)
from channels.json_body import load_json

VISITOR_ID = re.compile(r"^[A-Za-z0-9_-]{8,128}$")
CLIENT_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
MAX_TEXT_CHARS = 8000

# How long the widget shows one typing frame; renewed while the reply is being written.
TYPING_REPEAT_S: Final = 5.0

Deliver = Callable[[OutboundMessage], Awaitable[None]]
# (visitor id, frame) to every socket the visitor has open, in any gateway process.
SendFrame = Callable[[str, dict[str, Any]], Awaitable[None]]


def bearer_token(headers: Mapping[str, str]) -> str | None:
    for key, value in headers.items():
        if key.lower() == "authorization":
            scheme, _, token = value.partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


def _field(data: Mapping[str, Any], name: str, pattern: re.Pattern[str] | None = None) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise PayloadInvalid(f"{name} must be a non-empty string")
    if pattern is not None and not pattern.fullmatch(value):
        raise PayloadInvalid(f"{name} has an invalid format")
    return value


def visitor_id_of(data: Mapping[str, Any]) -> str:
    return _field(data, "visitor_id", VISITOR_ID)


def message_from(
    data: Mapping[str, Any], *, visitor_id: str, token: str | None, received_at: datetime
) -> InboundMessage:
    """A typed message from a REST body or a websocket `message` frame."""
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise PayloadInvalid("text must be a non-empty string")
    if len(text) > MAX_TEXT_CHARS:
        raise PayloadInvalid(f"text is longer than {MAX_TEXT_CHARS} characters")
    client_id = _field(data, "client_message_id", CLIENT_MESSAGE_ID)
    return InboundMessage(
        channel="webchat",
        provider_message_id=f"{visitor_id}:{client_id}",
        sender=visitor_id,
        text=text,
        received_at=received_at,
        identity_token=token,
        client_message_id=client_id,
    )


def client_message_id_of(provider_message_id: str | None) -> str | None:
    """The visitor's `client_message_id` in a web chat `provider_message_id`
    (`<visitor_id>:<client_message_id>`; a visitor id has no colon, a client id may)."""
    if provider_message_id is None:
        return None
    _, colon, client_id = provider_message_id.partition(":")
    return client_id if colon and CLIENT_MESSAGE_ID.fullmatch(client_id) else None


def typing_frame(reply_to: str | None) -> dict[str, Any]:
    return {"type": "typing", "reply_to": client_message_id_of(reply_to)}


def partial_frame(reply_to: str | None, text: str) -> dict[str, Any]:
    return {"type": "partial", "reply_to": client_message_id_of(reply_to), "text": text}


class WebChatChannel:
    name = "webchat"
    typing_repeat_s = TYPING_REPEAT_S

    def __init__(
        self,
        deliver: Deliver,
        clock: Callable[[], datetime],
        *,
        send_frame: SendFrame | None = None,
    ) -> None:
        self._deliver = deliver
        self._clock = clock
        # Without a frame sink there is no one to show typing or previews to: they do nothing.
        self._send_frame = send_frame

    def verify(self, request: RawRequest) -> None:
        """Nothing to verify: web chat has no provider signature (see module docstring)."""

    def parse(self, request: RawRequest) -> Parsed:
        data = load_json(request.body)
        if not isinstance(data, dict):
            raise PayloadInvalid("body must be a JSON object")
        visitor = visitor_id_of(data)
        token = bearer_token(request.headers)
        inbound = message_from(data, visitor_id=visitor, token=token, received_at=self._clock())
        return Parsed(messages=(inbound,))

    async def send(self, message: OutboundMessage) -> SendResult:
        await self._deliver(message)
        return SendResult(provider_message_ids=(message.message_id or "",))

    async def typing(self, recipient: str, reply_to: str | None) -> None:
        if self._send_frame is not None:
            await self._send_frame(recipient, typing_frame(reply_to))

    async def preview(self, recipient: str, reply_to: str | None, text: str) -> None:
        if self._send_frame is not None:
            await self._send_frame(recipient, partial_frame(reply_to, text))
