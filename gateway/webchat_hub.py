"""Open web chat sockets by visitor, and delivery of replies to them.

A reply for a visitor with no open socket is not lost: it is stored, and the widget fetches
what it missed with its `after` cursor when it reconnects.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from aiohttp import web

from channels.base import OutboundMessage


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
    def __init__(self) -> None:
        self._sockets: dict[str, set[web.WebSocketResponse]] = defaultdict(set)

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
        from gateway.clock import utcnow

        await self.broadcast(
            message.recipient,
            message_frame(
                message.message_id or "", "assistant", message.text, utcnow().isoformat(), None
            ),
        )

    async def close_all(self) -> None:
        for sockets in list(self._sockets.values()):
            for socket in list(sockets):
                with contextlib.suppress(Exception):
                    await socket.close()
