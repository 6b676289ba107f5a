"""Where the gateway records an event: in the caller's transaction, only when an events URL
is configured (without one, nothing is kept that nobody would take)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from gateway.storage.repositories import outbound_events

CONVERSATION_WAITING = "conversation.waiting"
CONVERSATION_OWNER_CHANGED = "conversation.owner_changed"
MESSAGE_CREATED = "message.created"
TOOL_CALLED = "tool.called"
IDENTITY_VERIFIED = "identity.verified"


class EventOutbox:
    def __init__(self, *, enabled: bool, wake: Callable[[], None] | None = None) -> None:
        self.enabled = enabled
        # Called once a transaction that recorded an event has committed (this process's
        # sender, or the wake-up of the senders elsewhere), so an event goes out at once
        # instead of at the next poll.
        self.wake = wake

    async def record(self, session: AsyncSession, kind: str, data: dict[str, Any]) -> None:
        """Add the event to the transaction under way; it is sent once that commits."""
        if self.enabled:
            await outbound_events.add_event(session, kind, data)
            self._wake_after_commit(session)

    def _wake_after_commit(self, session: AsyncSession) -> None:
        # After the commit, not now: the sender could not see the row yet. A rollback never
        # wakes it. The listener lives as long as the session (sessions serve one request).
        sync = session.sync_session
        if self.wake is not None and not event.contains(sync, "after_commit", self._committed):
            event.listen(sync, "after_commit", self._committed)

    def _committed(self, session: Session) -> None:
        if self.wake is not None:
            self.wake()
