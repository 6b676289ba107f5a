"""Delivery status of outbound messages: it only moves forward.

    queued → sending → sent → delivered → read        failed / undelivered / canceled end it

A callback that would move a status backwards (out of order), repeat it (duplicate) or change
a final one is ignored. A status for a message we have not recorded yet (the callback beat
our own write) is kept and joined to the send when that is recorded.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import OutboundMessage

PROGRESS = {
    "accepted": 0,
    "scheduled": 0,
    "queued": 0,
    "sending": 1,
    "sent": 2,
    "delivered": 3,
    "read": 4,
}
FINAL = frozenset({"failed", "undelivered", "canceled"})


def advances(current: str, new: str) -> bool:
    """Whether a callback saying `new` may replace `current`."""
    if current in FINAL or current == "read":
        return False
    if new in FINAL:
        return True
    if new not in PROGRESS:
        return False
    return PROGRESS[new] > PROGRESS.get(current, -1)


async def record_sent(
    session: AsyncSession,
    *,
    channel: str,
    provider_ids: tuple[str, ...],
    turn_id: int | None,
    reply_message_id: int | None,
) -> None:
    for part, provider_id in enumerate(provider_ids):
        # The row may exist already when a status callback got in before this write.
        row, _ = await _row_or_insert(session, channel, provider_id)
        row.turn_id, row.reply_message_id, row.part = turn_id, reply_message_id, part


async def apply_status(
    session: AsyncSession, *, channel: str, provider_id: str, status: str, error_code: str | None
) -> bool:
    """Apply one status callback; True when it changed the stored status."""
    status = status.lower()
    row, created = await _row_or_insert(session, channel, provider_id, status=status)
    if created:
        row.error_code = error_code
        return True
    if not advances(row.status, status):
        return False
    row.status = status
    if error_code:
        row.error_code = error_code
    return True


async def _row_or_insert(
    session: AsyncSession, channel: str, provider_id: str, *, status: str = "queued"
) -> tuple[OutboundMessage, bool]:
    """The message's row, inserted when missing; concurrent inserts of the same message are
    resolved by the unique constraint."""
    row = await _row(session, channel, provider_id)
    if row is not None:
        return row, False
    try:
        async with session.begin_nested():
            row = OutboundMessage(channel=channel, provider_message_id=provider_id, status=status)
            session.add(row)
        return row, True
    except IntegrityError:
        existing = await _row(session, channel, provider_id)
        if existing is None:
            raise
        return existing, False


async def _row(session: AsyncSession, channel: str, provider_id: str) -> OutboundMessage | None:
    return await session.scalar(
        select(OutboundMessage).where(
            OutboundMessage.channel == channel,
            OutboundMessage.provider_message_id == provider_id,
        )
    )


async def statuses(session: AsyncSession, turn_id: int) -> list[tuple[int, str]]:
    rows = await session.scalars(
        select(OutboundMessage)
        .where(OutboundMessage.turn_id == turn_id)
        .order_by(OutboundMessage.part)
    )
    return [(row.part, row.status) for row in rows]
