"""The delivery side of turns: which replies are still to be delivered, and the lease that lets
one sender at a time send one (`gateway.turns.deliver`, `gateway.turns.delivery_order`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import TurnRow
from gateway.storage.records import TurnRecord
from gateway.storage.repositories.turns import turn_record

# A reply stored with no delivery status for this long was never handed to its channel (the
# process stopped between the two; only rows stored before the lease was taken with the reply).
STRANDED_AFTER = timedelta(minutes=2)


def _undelivered(*, due_only: bool) -> Any:
    """Replies still to be delivered: retryable or waiting ("retry"), stranded, or being sent
    ("sending"; with `due_only`, only those whose lease ran out)."""
    now = utcnow()
    sending = TurnRow.delivery_status == "sending"
    return or_(
        TurnRow.delivery_status == "retry",
        and_(sending, TurnRow.delivery_lease_until < now) if due_only else sending,
        and_(
            TurnRow.delivery_status.is_(None),
            TurnRow.reply_message_id.is_not(None),
            TurnRow.updated_at < now - STRANDED_AFTER,
        ),
    )


async def undelivered_of(
    session: AsyncSession, conversation_key: str, *, limit: int
) -> list[TurnRecord]:
    """The conversation's replies still to be delivered, oldest first (leases live or not)."""
    rows = await session.scalars(
        select(TurnRow)
        .where(TurnRow.conversation_key == conversation_key, _undelivered(due_only=False))
        .order_by(TurnRow.id)
        .limit(limit)
    )
    return [turn_record(row) for row in rows]


async def undelivered_conversations(session: AsyncSession, *, limit: int) -> list[str]:
    """Conversations with a reply due for delivery now: a retry, a lease run out, a stranded
    reply; those waiting longest first."""
    rows = await session.execute(
        select(TurnRow.conversation_key)
        .where(_undelivered(due_only=True))
        .group_by(TurnRow.conversation_key)
        .order_by(func.min(TurnRow.updated_at))
        .limit(limit)
    )
    return [key for (key,) in rows]


async def claim_delivery(session: AsyncSession, turn_id: int, lease: timedelta) -> bool:
    """Take the right to send this turn's reply until the lease ends; False when another
    sender holds a live lease or the reply is already sent or given up."""
    now = utcnow()
    result = await session.execute(
        update(TurnRow)
        .where(
            TurnRow.id == turn_id,
            TurnRow.reply_message_id.is_not(None),
            or_(
                TurnRow.delivery_status.is_(None),
                TurnRow.delivery_status == "retry",
                and_(TurnRow.delivery_status == "sending", TurnRow.delivery_lease_until < now),
            ),
        )
        .values(delivery_status="sending", delivery_lease_until=now + lease)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]
