"""What a row of the inbox shows beside the conversation itself: its last message (the
preview), the link level of its channel identity, and which conversations have a message
containing a searched text. A conversation is one customer on one channel, so its messages
are the customer's messages on that channel."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import ChannelIdentity, Message
from gateway.storage.records import ConversationRecord

_SHOWN_ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class LastMessage:
    text: str
    role: str
    at: datetime


async def last_messages(
    session: AsyncSession, found: Sequence[ConversationRecord]
) -> dict[str, LastMessage]:
    """Conversation id → its newest customer or reply message (redacted ones left out)."""
    customer_ids = sorted({c.customer_id for c in found})
    if not customer_ids:
        return {}
    newest = (
        select(func.max(Message.id))
        .where(
            Message.customer_id.in_(customer_ids),
            Message.role.in_(_SHOWN_ROLES),
            Message.redacted.is_(False),
        )
        .group_by(Message.customer_id, Message.channel)
    )
    rows = await session.execute(
        select(
            Message.customer_id, Message.channel, Message.text, Message.role, Message.created_at
        ).where(Message.id.in_(newest))
    )
    by_thread = {
        (row.customer_id, row.channel): LastMessage(row.text, row.role, row.created_at)
        for row in rows
    }
    return {
        c.id: by_thread[(c.customer_id, c.channel)]
        for c in found
        if (c.customer_id, c.channel) in by_thread
    }


async def link_levels(session: AsyncSession, identity_ids: Iterable[str]) -> dict[str, str]:
    ids = sorted(set(identity_ids))
    if not ids:
        return {}
    rows = await session.execute(
        select(ChannelIdentity.id, ChannelIdentity.link_level).where(ChannelIdentity.id.in_(ids))
    )
    return {identity_id: level for identity_id, level in rows}


async def with_text(
    session: AsyncSession, found: Sequence[ConversationRecord], text: str
) -> set[str]:
    """The ids of the conversations among `found` with a message containing `text`
    (case-insensitive, literal: LIKE's wildcards are escaped)."""
    customer_ids = sorted({c.customer_id for c in found})
    if not customer_ids or not text.strip():
        return set()
    rows = await session.execute(
        select(Message.customer_id, Message.channel)
        .where(
            Message.customer_id.in_(customer_ids),
            Message.redacted.is_(False),
            Message.text.icontains(text.strip(), autoescape=True),
        )
        .distinct()
    )
    matching = {(row.customer_id, row.channel) for row in rows}
    return {c.id for c in found if (c.customer_id, c.channel) in matching}
