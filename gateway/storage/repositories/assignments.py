"""Which operator a conversation is assigned to, and each operator's unread count: the
customer's messages of the conversation (its customer on its channel) stored after the
operator last opened it (all of them when they never did)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation, Message
from gateway.storage.models_inbox import ConversationAssignment, ConversationRead
from gateway.storage.records import ConversationRecord


async def assigned_to(session: AsyncSession, conversation_id: str) -> str | None:
    row = await session.get(ConversationAssignment, conversation_id)
    return row.operator if row is not None else None


async def assign(
    session: AsyncSession, conversation_id: str, operator: str | None, *, by: str
) -> None:
    """Assign the conversation to `operator`, or unassign it (None)."""
    await session.execute(
        delete(ConversationAssignment).where(
            ConversationAssignment.conversation_id == conversation_id
        )
    )
    if operator is not None:
        session.add(
            ConversationAssignment(
                conversation_id=conversation_id,
                operator=operator,
                assigned_by=by,
                assigned_at=utcnow(),
            )
        )
    await session.flush()


async def assignments(session: AsyncSession, found: Sequence[ConversationRecord]) -> dict[str, str]:
    """Conversation id → the operator it is assigned to (unassigned ones left out)."""
    ids = sorted({c.id for c in found})
    if not ids:
        return {}
    rows = await session.execute(
        select(ConversationAssignment.conversation_id, ConversationAssignment.operator).where(
            ConversationAssignment.conversation_id.in_(ids)
        )
    )
    return {conversation_id: operator for conversation_id, operator in rows}


async def mark_read(
    session: AsyncSession, conversation_id: str, operator: str, *, at: datetime | None = None
) -> None:
    """The operator opened the conversation: what the customer wrote until now is read."""
    when = at or utcnow()
    row = await session.get(ConversationRead, (conversation_id, operator))
    if row is None:
        session.add(
            ConversationRead(conversation_id=conversation_id, operator=operator, read_at=when)
        )
    else:
        row.read_at = max(row.read_at, when)
    await session.flush()


async def unread_counts(
    session: AsyncSession, found: Sequence[ConversationRecord], operator: str
) -> dict[str, int]:
    """Conversation id → the customer's messages the operator has not read (0s left out)."""
    ids = sorted({c.id for c in found})
    if not ids:
        return {}
    read = (
        select(ConversationRead.conversation_id, ConversationRead.read_at)
        .where(ConversationRead.operator == operator, ConversationRead.conversation_id.in_(ids))
        .subquery()
    )
    query = (
        select(Conversation.id, func.count(Message.id))
        .join(
            Message,
            and_(
                Message.customer_id == Conversation.customer_id,
                Message.channel == Conversation.channel,
                Message.role == "user",
            ),
        )
        .outerjoin(read, read.c.conversation_id == Conversation.id)
        .where(
            Conversation.id.in_(ids),
            (read.c.read_at.is_(None)) | (Message.created_at > read.c.read_at),
        )
        .group_by(Conversation.id)
    )
    return {conversation_id: int(count) for conversation_id, count in await session.execute(query)}
