"""Open web chat sockets by visitor, and delivery of replies to them.

A reply for a visitor with no open socket is not lost: it is stored, and the widget fetches
what it missed with its `after` cursor when it reconnects.

With a `publish` callable (several gateway processes, see `gateway.webchat.fanout`) `deliver`
hands the frame to it instead of broadcasting, and every process broadcasts what it receives
to its own sockets; if publishing fails the frame is broadcast here only.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from channels.base import OutboundMessage

log = logging.getLogger("relaydesk.webchat")

Publish = Callable[[str, dict[str, Any]], Awaitable[None]]


def message_frame(
    message_id: int | str, role: str, text: str, created_at: str, client_message_id: str | None
) -> dict[str, Any]:
    return {
        "type": "message",
        "message_id": str(message_id),
        "role": role,
        "text": text,
        "created_at": created_at,
        "client_message_id": client_message_id,
    }


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

        frame = message_frame(
            message.message_id or "", "assistant", message.text, utcnow().isoformat(), None
        )
        if self._publish is not None:
            try:
                await self._publish(message.recipient, frame)
                return
            except Exception as exc:  # the reply is stored; reach at least the local sockets
                log.warning(
                    "web chat fan-out publish failed",
                    extra={"fields": {"error": type(exc).__name__}},
                )
        await self.broadcast(message.recipient, frame)

    async def close_all(self) -> None:
        for sockets in list(self._sockets.values()):
            for socket in list(sockets):
                with contextlib.suppress(Exception):
                    await socket.close()
