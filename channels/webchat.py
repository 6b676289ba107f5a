"""Web chat: the widget's REST body and websocket frames; replies go to a delivery sink.

There is no provider signature here: the visitor id is a random, unguessable value the widget
keeps, and who the visitor *is* comes only from the optional identity token (verified by the
identity rules, never here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from channels.base import InboundMessage, OutboundMessage, PayloadInvalid, RawRequest, SendResult

VISITOR_ID = re.compile(r"^[A-Za-z0-9_-]{8,128}$")
CLIENT_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
MAX_TEXT_CHARS = 8000

Deliver = Callable[[OutboundMessage], Awaitable[None]]


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
        extra={"client_message_id": client_id},
    )


class WebChatChannel:
    name = "webchat"

    def __init__(self, deliver: Deliver, clock: Callable[[], datetime]) -> None:
        self._deliver = deliver
        self._clock = clock

    def verify(self, request: RawRequest) -> None:
        """Nothing to verify: web chat has no provider signature (see module docstring)."""

    def parse(self, request: RawRequest) -> tuple[InboundMessage, ...]:
        try:
            data = json.loads(request.body or b"null")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PayloadInvalid(f"body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise PayloadInvalid("body must be a JSON object")
        visitor = visitor_id_of(data)
        token = bearer_token(request.headers)
        return (message_from(data, visitor_id=visitor, token=token, received_at=self._clock()),)

    async def send(self, message: OutboundMessage) -> SendResult:
        await self._deliver(message)
        return SendResult(provider_message_ids=(message.message_id or "",))
