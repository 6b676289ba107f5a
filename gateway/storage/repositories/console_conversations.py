"""What the console's conversations pages read themselves (the rest comes through the operator
API): whether a conversation exists, and a mark that changes with any conversation (a new one,
a message, an owner change, an assignment, a note), which tells a live page to read them
again."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import Conversation
from gateway.storage.models_inbox import ConversationAssignment
from gateway.storage.models_notes import ConversationNote

# One statement a poll: the conversations (a new one, a message, an owner change), their
# assignments (assigned or unassigned, a teammate's "Mine" changes) and their notes (another
# operator's note shows on every open page).
_MARK = select(
    select(func.count(Conversation.id)).scalar_subquery(),
    select(func.max(Conversation.last_message_at)).scalar_subquery(),
    select(func.max(Conversation.owner_since)).scalar_subquery(),
    select(func.count()).select_from(ConversationAssignment).scalar_subquery(),
    select(func.max(ConversationAssignment.assigned_at)).scalar_subquery(),
    select(func.count()).select_from(ConversationNote).scalar_subquery(),
    select(func.max(ConversationNote.id)).scalar_subquery(),
)


async def change_mark(session: AsyncSession) -> str:
    """A value that differs whenever a conversation was added, written to, changed hands, was
    assigned or got a note."""
    row = (await session.execute(_MARK)).one()
    return "|".join(
        "" if value is None else value.isoformat() if hasattr(value, "isoformat") else str(value)
        for value in row
    )


async def conversation_exists(session: AsyncSession, conversation_id: str) -> bool:
    found = await session.scalar(select(Conversation.id).where(Conversation.id == conversation_id))
    return found is not None
