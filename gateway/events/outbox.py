"""Where the gateway records an event: in the caller's transaction, only when an events URL
is configured (without one, nothing is kept that nobody would take)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import outbound_events

CONVERSATION_WAITING = "conversation.waiting"
CONVERSATION_OWNER_CHANGED = "conversation.owner_changed"
MESSAGE_CREATED = "message.created"


class EventOutbox:
    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled

    async def record(self, session: AsyncSession, kind: str, data: dict[str, Any]) -> None:
        """Add the event to the transaction under way; it is sent once that commits."""
        if self.enabled:
            await outbound_events.add_event(session, kind, data)
