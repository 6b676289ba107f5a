"""What the console's conversations pages read themselves (the rest comes through the operator
API): whether a conversation exists, and a mark that changes with any conversation (a new one,
a message, an owner change), which tells a live page to read them again."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import Conversation
from gateway.storage.models_inbox import ConversationAssignment

_MARK = select(
    func.count(Conversation.id),
    func.max(Conversation.last_message_at),
    func.max(Conversation.owner_since),
)


# Assignments too: assigned or unassigned, a teammate's "Mine" changes.
_ASSIGNED = select(func.count(), func.max(ConversationAssignment.assigned_at)).select_from(
    ConversationAssignment
)


async def change_mark(session: AsyncSession) -> str:
    """A value that differs whenever a conversation was added, written to, changed hands or
    was assigned."""
    count, last_message, last_owner_change = (await session.execute(_MARK)).one()
    assigned, last_assigned = (await session.execute(_ASSIGNED)).one()
    stamps = (
        stamp.isoformat() if stamp is not None else ""
        for stamp in (last_message, last_owner_change, last_assigned)
    )
    return "|".join((str(count), str(assigned), *stamps))


async def conversation_exists(session: AsyncSession, conversation_id: str) -> bool:
    found = await session.scalar(select(Conversation.id).where(Conversation.id == conversation_id))
    return found is not None
