"""Outbound events: written in the transaction of the change they announce (so an event exists
exactly when its change was committed), then taken by the event sender.

A row is in one of three states:
- pending: `delivered_at IS NULL` and `next_attempt_at` a real time (due once it has passed),
  held by a sender while `lease_until` is in the future;
- delivered: `delivered_at` set (the receiver answered 2xx), deleted after a retention;
- given up: `delivered_at IS NULL` and `next_attempt_at = GIVEN_UP` (a far-future sentinel, so
  the due index never reads it again), `last_error` saying why; deleted after a retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundEvent
from gateway.storage.repositories.bound_lists import values_in

# `next_attempt_at` of an event no sender will try again (a refusal, or too many attempts).
GIVEN_UP = datetime(9999, 1, 1, tzinfo=UTC)
ERROR_CHARS = 2000


@dataclass(frozen=True, slots=True)
class ClaimedEvent:
    """An event a sender holds the lease of, with what its body is built from."""

    id: int
    kind: str
    payload: dict[str, Any]
    created_at: datetime
    attempts: int  # attempts made before this one


@dataclass(frozen=True, slots=True)
class OutboundEventState:
    id: int
    kind: str
    attempts: int
    next_attempt_at: datetime
    lease_until: datetime | None
    last_error: str | None
    delivered_at: datetime | None

    @property
    def given_up(self) -> bool:
        return self.delivered_at is None and self.next_attempt_at >= GIVEN_UP


def _aware(value: datetime) -> datetime:
    # SQLite hands timestamps back naive; every stored one is UTC.
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _maybe_aware(value: datetime | None) -> datetime | None:
    return None if value is None else _aware(value)


def _dialect(session: AsyncSession) -> str:
    bind = session.bind
    return "postgresql" if bind is not None and bind.dialect.name == "postgresql" else "sqlite"


async def add_event(session: AsyncSession, kind: str, payload: dict[str, Any]) -> None:
    now = utcnow()
    await session.execute(
        insert(OutboundEvent).values(
            kind=kind, payload=payload, attempts=0, next_attempt_at=now, created_at=now
        )
    )


def _due(now: datetime) -> list[Any]:
    return [
        OutboundEvent.delivered_at.is_(None),
        OutboundEvent.next_attempt_at <= now,
        or_(OutboundEvent.lease_until.is_(None), OutboundEvent.lease_until < now),
    ]


async def claim_due(
    session: AsyncSession, *, now: datetime, lease: timedelta, limit: int
) -> list[ClaimedEvent]:
    """Lease up to `limit` due events, lowest id first, in the caller's transaction (which
    should commit at once). PostgreSQL skips rows another claim has locked; SQLite takes the
    write lock at BEGIN, so claims there run one at a time and the conditional UPDATE suffices.
    Either way a row is leased by one claim only."""
    chosen = select(OutboundEvent.id).where(*_due(now)).order_by(OutboundEvent.id).limit(limit)
    if _dialect(session) == "postgresql":
        chosen = chosen.with_for_update(skip_locked=True)
    rows = await session.execute(
        update(OutboundEvent)
        # The due conditions again: PostgreSQL re-checks them on a row another claim just took.
        .where(OutboundEvent.id.in_(chosen.scalar_subquery()), *_due(now))
        .values(lease_until=now + lease)
        .returning(
            OutboundEvent.id,
            OutboundEvent.kind,
            OutboundEvent.payload,
            OutboundEvent.created_at,
            OutboundEvent.attempts,
        )
        .execution_options(synchronize_session=False)
    )
    claimed = [
        ClaimedEvent(
            id=int(row.id),
            kind=row.kind,
            payload=dict(row.payload),
            created_at=_aware(row.created_at),
            attempts=int(row.attempts),
        )
        for row in rows
    ]
    claimed.sort(key=lambda event: event.id)  # RETURNING keeps no order
    return claimed


def _settle(event_id: int, **values: Any) -> Any:
    return (
        update(OutboundEvent)
        .where(OutboundEvent.id == event_id, OutboundEvent.delivered_at.is_(None))
        .values(lease_until=None, attempts=OutboundEvent.attempts + 1, **values)
        .execution_options(synchronize_session=False)
    )


async def mark_delivered(session: AsyncSession, event_id: int, *, now: datetime) -> None:
    await session.execute(_settle(event_id, delivered_at=now, last_error=None))


async def retry_later(session: AsyncSession, event_id: int, *, at: datetime, error: str) -> None:
    await session.execute(_settle(event_id, next_attempt_at=at, last_error=error[:ERROR_CHARS]))


async def give_up(session: AsyncSession, event_id: int, *, error: str) -> None:
    await session.execute(
        _settle(event_id, next_attempt_at=GIVEN_UP, last_error=error[:ERROR_CHARS])
    )


async def release(session: AsyncSession, ids: Sequence[int]) -> None:
    """End leases without an attempt: the events are due again at once."""
    if ids:
        await session.execute(
            update(OutboundEvent)
            .where(values_in(session, OutboundEvent.id, ids))
            .values(lease_until=None)
            .execution_options(synchronize_session=False)
        )


async def pending(session: AsyncSession) -> int:
    """Events not delivered yet and still to be tried (due, backing off or leased)."""
    count = await session.scalar(
        select(func.count())
        .select_from(OutboundEvent)
        .where(OutboundEvent.delivered_at.is_(None), OutboundEvent.next_attempt_at < GIVEN_UP)
    )
    return int(count or 0)


async def purge(
    session: AsyncSession,
    *,
    delivered_before: datetime,
    given_up_before: datetime,
    limit: int,
) -> int:
    """Delete up to `limit` events delivered before `delivered_before`, or given up and
    created before `given_up_before`; how many were deleted (call again while it is `limit`)."""
    old = (
        select(OutboundEvent.id)
        .where(
            or_(
                OutboundEvent.delivered_at < delivered_before,
                (OutboundEvent.next_attempt_at >= GIVEN_UP)
                & (OutboundEvent.created_at < given_up_before),
            )
        )
        .order_by(OutboundEvent.id)
        .limit(limit)
    )
    ids = list((await session.scalars(old)).all())
    if ids:
        await session.execute(
            delete(OutboundEvent).where(values_in(session, OutboundEvent.id, ids))
        )
    return len(ids)


async def states(
    session: AsyncSession, ids: Sequence[int] | None = None
) -> list[OutboundEventState]:
    """The events with these ids (all of them when None), in id order."""
    query = select(OutboundEvent).order_by(OutboundEvent.id)
    if ids is not None:
        query = query.where(OutboundEvent.id.in_(list(ids)))
    return [
        OutboundEventState(
            id=row.id,
            kind=row.kind,
            attempts=row.attempts,
            next_attempt_at=_aware(row.next_attempt_at),
            lease_until=_maybe_aware(row.lease_until),
            last_error=row.last_error,
            delivered_at=_maybe_aware(row.delivered_at),
        )
        for row in await session.scalars(query)
    ]
