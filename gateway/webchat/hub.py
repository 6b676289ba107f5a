"""Open web chat sockets by visitor, and delivery of replies to them.

A reply for a visitor with no open socket is not lost: it is stored, and the widget fetches
what it missed with its `after` cursor when it reconnects. The typing and partial frames
(`send_frame`, see `channels.webchat`) are not stored: a visitor with no open socket misses them.

With a `publish` callable (several gateway processes, see `gateway.webchat.fanout`) `deliver`
and `send_frame` hand the frame to it instead of broadcasting, and every process broadcasts
what it receives to its own sockets; if publishing fails the frame is broadcast here only.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from channels.base import Media, OutboundMessage, SourceLink
from channels.webchat import client_message_id_of
from gateway.webchat.frames import Author, citation_items, media_items

log = logging.getLogger("relaydesk.webchat")

Publish = Callable[[str, dict[str, Any]], Awaitable[None]]


def message_frame(
    message_id: int | str,
    role: str,
    text: str,
    created_at: str,
    client_message_id: str | None,
    media: Sequence[Media] = (),
    *,
    author: Author,
    citations: Sequence[SourceLink] = (),
) -> dict[str, Any]:
    """A stored message as a `message` frame; `media` only when it carries attachments,
    `citations` only when its text cites documents; `author` ("customer", "bot" or
    "operator") and `author_name` (the operator's, else null) say who wrote it."""
    frame: dict[str, Any] = {
        "type": "message",
        "message_id": str(message_id),
        "role": role,
        "text": text,
        "created_at": created_at,
        "client_message_id": client_message_id,
        "author": author.kind,
        "author_name": author.name,
    }
    if media:
        frame["media"] = media_items(media)
    if citations:
        frame["citations"] = citation_items(citations)
    return frame


def reply_frame(message: OutboundMessage, created_at: str) -> dict[str, Any]:
    """A stored reply as it goes out live: a `message` frame with the `reply_to` its partial
    frames carried (the visitor's `client_message_id` answered), so the widget replaces the
    growing bubble with it, its attachments (`media`, when it has any), the documents it
    cites (`citations`, when it cites any) and its buttons (`choices`: `title` and `payload`,
    when it has any)."""
    frame = message_frame(
        message.message_id or "",
        "assistant",
        message.text,
        created_at,
        None,
        message.media,
        author=Author.of("assistant", message.operator),
        citations=message.citations,
    )
    frame["reply_to"] = client_message_id_of(message.reply_to)
    if message.choices:  # buttons the widget shows under the reply (a satisfaction score)
        frame["choices"] = [
            {"title": choice.title, "payload": choice.payload} for choice in message.choices
        ]
    return frame


class WebChatHub:
    def __init__(self, publish: Publish | None = None) -> None:
        self._sockets: dict[str, set[web.WebSocketResponse]] = defaultdict(set)
        self._publish = publish

    def add(self, visitor_id: str, socket: web.WebSocketResponse) -> None:
        self._sockets[visitor_id].add(socket)

    def remove(self, visitor_id: str, socket: web.WebSocketResponse) -> None:
        sockets = self._sockets.get(visitor_id)
        if sockets is not None:
            sockets.discard(socket)
            if not sockets:
                del self._sockets[visitor_id]

    def connected(self, visitor_id: str) -> int:
        return len(self._sockets.get(visitor_id, ()))

    async def broadcast(self, visitor_id: str, frame: dict[str, Any]) -> None:
        for socket in list(self._sockets.get(visitor_id, ())):
            with contextlib.suppress(ConnectionError, RuntimeError):
                await socket.send_json(frame)

    async def deliver(self, message: OutboundMessage) -> None:
        from gateway.runtime.clock import utcnow

        await self.send_frame(message.recipient, reply_frame(message, utcnow().isoformat()))

    async def send_frame(self, visitor_id: str, frame: dict[str, Any]) -> None:
        """`frame` to every socket `visitor_id` has open, in this process or (fan-out) any."""
        if self._publish is not None:
            try:
                await self._publish(visitor_id, frame)
                return
            except Exception as exc:  # reach at least the local sockets (a reply is stored)
                log.warning(
                    "web chat fan-out publish failed",
                    extra={"fields": {"error": type(exc).__name__}},
                )
        await self.broadcast(visitor_id, frame)

    async def close_all(self) -> None:
        for sockets in list(self._sockets.values()):
            for socket in list(sockets):
                with contextlib.suppress(Exception):
                    await socket.close()
