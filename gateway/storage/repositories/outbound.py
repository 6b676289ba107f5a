"""Outbound messages a provider accepted from us, and the delivery status its callbacks report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, exists, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundMessage, TurnRow
from gateway.storage.records import OutboundRecord
from gateway.storage.repositories.tables import table_of

_FIND = select(OutboundMessage).where(
    OutboundMessage.channel == bindparam("channel"),
    OutboundMessage.provider_message_id == bindparam("provider_id"),
)


_OUTBOUND = table_of(OutboundMessage)


@dataclass(frozen=True, slots=True)
class RecordedPart:
    channel: str
    provider_id: str
    status: str
    error_code: str | None


def _record_part_upsert(insert: Callable[[Table], Any]) -> Any:
    """Insert the part's row as queued, or join an existing one (a status callback got in
    first) to its turn and reply, keeping its status."""
    statement = insert(_OUTBOUND)
    joined = ("turn_id", "reply_message_id", "part", "updated_at")
    return statement.on_conflict_do_update(
        index_elements=["channel", "provider_message_id"],
        set_={column: statement.excluded[column] for column in joined},
    ).returning(
        _OUTBOUND.c.channel,
        _OUTBOUND.c.provider_message_id,
        _OUTBOUND.c.status,
        _OUTBOUND.c.error_code,
    )


_RECORD_PART = {
    "postgresql": _record_part_upsert(pg_insert),
    "sqlite": _record_part_upsert(sqlite_insert),
}


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


async def _find_or_add(
    session: AsyncSession,
    channel: str,
    provider_id: str,
    *,
    status: str,
    error_code: str | None = None,
) -> tuple[OutboundMessage, bool]:
    row = await _find(session, channel, provider_id)
    if row is not None:
        return row, False
    try:
        async with session.begin_nested():
            row = OutboundMessage(
                channel=channel,
                provider_message_id=provider_id,
                status=status,
                error_code=error_code,
            )
            session.add(row)
        return row, True
    except IntegrityError:
        existing = await _find(session, channel, provider_id)
        if existing is None:
            raise
        return existing, False


async def find_or_add_outbound(
    session: AsyncSession,
    channel: str,
    provider_id: str,
    *,
    status: str = "queued",
    error_code: str | None = None,
) -> tuple[OutboundRecord, bool]:
    """The message's row, inserted with `status` and `error_code` when missing (True when this
    call inserted it). Concurrent inserts of one message are resolved by the unique
    constraint: the insert runs in a savepoint, and the one that loses reads the winner's row."""
    row, created = await _find_or_add(
        session, channel, provider_id, status=status, error_code=error_code
    )
    return outbound_record(row), created


@dataclass(frozen=True, slots=True)
class SentPart:
    """One message a provider accepted for a reply (a long reply is sent in parts)."""

    channel: str
    provider_id: str
    turn_id: int | None
    reply_message_id: int | None
    part: int


async def record_part(
    session: AsyncSession,
    channel: str,
    provider_id: str,
    *,
    turn_id: int | None,
    reply_message_id: int | None,
    part: int,
) -> None:
    """Join the message's row (inserted as queued unless a status callback got in first) to
    the turn and reply it was sent for, and its part of a long reply: one upsert, which keeps
    the status a callback already recorded."""
    await record_parts(session, [SentPart(channel, provider_id, turn_id, reply_message_id, part)])


async def record_parts(session: AsyncSession, parts: Sequence[SentPart]) -> list[RecordedPart]:
    """`record_part` for several parts, in one statement; each part's row as it stands after
    (a status callback that got in first has already set its status)."""
    if not parts:
        return []
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    now = utcnow()
    result = await session.execute(
        _RECORD_PART["postgresql" if dialect == "postgresql" else "sqlite"],
        [
            {
                "channel": sent.channel,
                "provider_message_id": sent.provider_id,
                "status": "queued",
                "turn_id": sent.turn_id,
                "reply_message_id": sent.reply_message_id,
                "part": sent.part,
                "created_at": now,
                "updated_at": now,
            }
            for sent in parts
        ],
    )
    return [
        RecordedPart(row.channel, row.provider_message_id, row.status, row.error_code)
        for row in result
    ]


async def join_to_reply(
    session: AsyncSession, outbound_id: int, *, turn_id: int, reply_id: int, part: int
) -> bool:
    """Join a message known only from its status (our record of the send was lost) to the
    turn and reply its provider says it was sent for, if that turn has that reply (a turn
    erased since, or a reference that names no reply of ours, joins nothing)."""
    result = await session.execute(
        update(OutboundMessage)
        .where(
            OutboundMessage.id == outbound_id,
            OutboundMessage.turn_id.is_(None),
            exists().where(TurnRow.id == turn_id, TurnRow.reply_message_id == reply_id),
        )
        .values(turn_id=turn_id, reply_message_id=reply_id, part=part)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def set_delivery_status(
    session: AsyncSession, outbound_id: int, *, status: str, error_code: str | None = None
) -> None:
    """Set the row's status, and its error code unless that is None."""
    values: dict[str, str] = {"status": status}
    if error_code is not None:
        values["error_code"] = error_code
    await session.execute(
        update(OutboundMessage).where(OutboundMessage.id == outbound_id).values(**values)
    )


async def sent_for_turn(session: AsyncSession, turn_id: int) -> list[OutboundRecord]:
    """The messages sent for a turn's reply, by part."""
    rows = await session.scalars(
        select(OutboundMessage)
        .where(OutboundMessage.turn_id == turn_id)
        .order_by(OutboundMessage.part)
    )
    return [outbound_record(row) for row in rows]
