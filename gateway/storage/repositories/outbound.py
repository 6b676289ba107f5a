"""Outbound messages a provider accepted from us, and the delivery status its callbacks report.

Changes to a row are made on the row this session loaded (`find_or_add_outbound`) and written
with the session's next flush, as one UPDATE of the changed columns.
"""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound
from gateway.storage.models import OutboundMessage
from gateway.storage.records import OutboundRecord

_FIND = select(OutboundMessage).where(
    OutboundMessage.channel == bindparam("channel"),
    OutboundMessage.provider_message_id == bindparam("provider_id"),
)


def outbound_record(row: OutboundMessage) -> OutboundRecord:
    return OutboundRecord(
        id=row.id,
        channel=row.channel,
        provider_message_id=row.provider_message_id,
        turn_id=row.turn_id,
        reply_message_id=row.reply_message_id,
        part=row.part,
        status=row.status,
        error_code=row.error_code,
    )


async def _find(session: AsyncSession, channel: str, provider_id: str) -> OutboundMessage | None:
    return await session.scalar(_FIND, {"channel": channel, "provider_id": provider_id})


async def find_or_add_outbound(
    session: AsyncSession, channel: str, provider_id: str, *, status: str = "queued"
) -> tuple[OutboundRecord, bool]:
    """The message's row, inserted with `status` when missing (True when this call inserted
    it). Concurrent inserts of one message are resolved by the unique constraint: the insert
    runs in a savepoint, and the one that loses reads the winner's row."""
    row = await _find(session, channel, provider_id)
    if row is not None:
        return outbound_record(row), False
    try:
        async with session.begin_nested():
            row = OutboundMessage(channel=channel, provider_message_id=provider_id, status=status)
            session.add(row)
        return outbound_record(row), True
    except IntegrityError:
        existing = await _find(session, channel, provider_id)
        if existing is None:
            raise
        return outbound_record(existing), False


async def _loaded(session: AsyncSession, outbound_id: int) -> OutboundMessage:
    # The row `find_or_add_outbound` loaded: taken from the session, no query.
    row = await session.get(OutboundMessage, outbound_id)
    if row is None:
        raise RecordNotFound(f"outbound message {outbound_id} not found")
    return row


async def attach_to_send(
    session: AsyncSession,
    outbound_id: int,
    *,
    turn_id: int | None,
    reply_message_id: int | None,
    part: int,
) -> None:
    """Join the row to the turn and reply it was sent for (and its part of a long reply)."""
    row = await _loaded(session, outbound_id)
    row.turn_id, row.reply_message_id, row.part = turn_id, reply_message_id, part


async def set_delivery_status(
    session: AsyncSession,
    outbound_id: int,
    *,
    status: str | None = None,
    error_code: str | None = None,
) -> None:
    """Set the status and/or the error code (each left as it is when None)."""
    row = await _loaded(session, outbound_id)
    if status is not None:
        row.status = status
    if error_code is not None:
        row.error_code = error_code


async def sent_for_turn(session: AsyncSession, turn_id: int) -> list[OutboundRecord]:
    """The messages sent for a turn's reply, by part."""
    rows = await session.scalars(
        select(OutboundMessage)
        .where(OutboundMessage.turn_id == turn_id)
        .order_by(OutboundMessage.part)
    )
    return [outbound_record(row) for row in rows]
