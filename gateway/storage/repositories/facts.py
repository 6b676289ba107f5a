"""Durable facts: every fact has a source message; a correction supersedes, history is kept."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import InvalidFactSource, RecordNotFound, require_customer
from gateway.storage.models import Fact
from gateway.storage.records import FactRecord, MessageRecord, NewFact
from gateway.storage.repositories.bound_lists import values_in
from gateway.storage.repositories.tables import FACTS, MESSAGES, AnyRow

# Facts in force, as plain rows of the table (every answer reads them).
_CURRENT = select(FACTS).where(
    FACTS.c.customer_id == bindparam("customer_id"),
    FACTS.c.superseded_by.is_(None),
    FACTS.c.retracted.is_(False),
)
_CURRENT_ALL = _CURRENT.order_by(FACTS.c.key, FACTS.c.id)
_CURRENT_IN_SCOPES = _CURRENT.where(
    FACTS.c.scope.in_(bindparam("scopes", expanding=True))
).order_by(FACTS.c.key, FACTS.c.id)
_INSERT = FACTS.insert().returning(*FACTS.c)
_SOURCE = select(
    MESSAGES.c.id, MESSAGES.c.channel, MESSAGES.c.episode_id, MESSAGES.c.identity_id
).where(MESSAGES.c.id == bindparam("id"), MESSAGES.c.customer_id == bindparam("customer_id"))
# Every row of the customer's facts, in force or not: a window needs both (see `window_facts`).
_ALL_ROWS = (
    select(FACTS)
    .where(FACTS.c.customer_id == bindparam("customer_id"))
    .order_by(FACTS.c.key, FACTS.c.id)
)


def fact_record(row: Fact | AnyRow) -> FactRecord:
    """From an ORM row, or a Core row of the facts table (the same attribute names)."""
    raw_tags = row.tags.get("tags", []) if isinstance(row.tags, dict) else []
    return FactRecord(
        id=row.id,
        customer_id=row.customer_id,
        key=row.key,
        value=row.value,
        scope=row.scope,
        tags=tuple(str(tag) for tag in raw_tags),
        source_message_id=row.source_message_id,
        source_channel=row.source_channel,
        source_episode_id=row.source_episode_id,
        source_identity_id=row.source_identity_id,
        confidence=row.confidence,
        confirmed=row.confirmed,
        confirmed_at=row.confirmed_at,
        confirmed_by_message_id=row.confirmed_by_message_id,
        pinned=row.pinned,
        retracted=row.retracted,
        superseded_by=row.superseded_by,
        created_at=row.created_at,
    )


async def stored_from(
    session: AsyncSession, customer_id: str, message_ids: Collection[int]
) -> set[tuple[str, str, int]]:
    """(key, value, source message) of every fact these messages gave that was not retracted
    (superseded ones included: a later correction stands; a rebuild retracts and rewrites)."""
    customer_id = require_customer(customer_id)
    if not message_ids:
        return set()
    # Plain columns of the table: the facts of every message being answered are checked.
    rows = await session.execute(
        select(FACTS.c.key, FACTS.c.value, FACTS.c.source_message_id).where(
            FACTS.c.customer_id == customer_id,
            values_in(session, FACTS.c.source_message_id, sorted(message_ids)),
            FACTS.c.retracted.is_(False),
        )
    )
    return {(key, value, int(source)) for key, value, source in rows}


async def record_fact(
    session: AsyncSession,
    customer_id: str,
    new: NewFact,
    *,
    single_valued: bool = True,
    source: MessageRecord | None = None,
) -> FactRecord:
    """Store a fact sourced to one of this customer's messages.

    For a single-valued key, a current fact with another value is superseded by the new row
    (unless an operator pinned it);
    a multi-valued key (order ids, preferences…) gains the value alongside the others. The
    same value again changes nothing and returns the current fact. `source`: the source
    message when the caller holds it already (it is not read again).
    """
    require_customer(customer_id)
    origin = await _source(session, customer_id, new.source_message_id, source)
    if origin is None:
        raise InvalidFactSource(
            f"fact {new.key!r}: source message {new.source_message_id} is not this customer's"
        )
    if not single_valued:
        same = await session.scalar(
            select(Fact).where(
                Fact.customer_id == customer_id,
                Fact.key == new.key,
                Fact.value == new.value,
                Fact.superseded_by.is_(None),
                Fact.retracted.is_(False),
            )
        )
        if same is not None:
            return fact_record(same)
    current = await _current_row(session, customer_id, new.key) if single_valued else None
    if current is not None and (current.value == new.value or current.pinned):
        # A pinned value is an operator's decision: only an operator replaces it.
        return fact_record(current)
    values = {
        "customer_id": customer_id,
        "key": new.key,
        "value": new.value,
        "scope": new.scope,
        "tags": {"tags": list(new.tags)},
        "source_message_id": origin.id,
        "source_channel": origin.channel,
        "source_episode_id": origin.episode_id,
        "source_identity_id": origin.identity_id,
        "confidence": new.confidence,
        "confirmed": new.confirmed,
        "confirmed_at": utcnow() if new.confirmed else None,
        "confirmed_by_message_id": origin.id if new.confirmed else None,
        "pinned": new.pinned,
    }
    # A Core insert: a flush of the session's unit of work costs several times the statement.
    row = (await session.execute(_INSERT, values)).one()
    if current is not None:
        current.superseded_by = row.id
        await session.flush()
    return fact_record(row)


@dataclass(frozen=True, slots=True)
class _Origin:
    """What a fact copies from its source message."""

    id: int
    channel: str
    episode_id: str
    identity_id: str | None


async def _source(
    session: AsyncSession, customer_id: str, message_id: int, held: MessageRecord | None
) -> _Origin | None:
    """The fact's source message, if it is this customer's; None otherwise."""
    if held is not None and held.id == message_id:
        if held.customer_id != customer_id:
            return None
        return _Origin(held.id, held.channel, held.episode_id, held.identity_id)
    params = {"id": message_id, "customer_id": customer_id}
    row = (await session.execute(_SOURCE, params)).first()
    return _Origin(row.id, row.channel, row.episode_id, row.identity_id) if row else None


async def _current_row(session: AsyncSession, customer_id: str, key: str) -> Fact | None:
    return await session.scalar(
        select(Fact)
        .where(
            Fact.customer_id == customer_id,
            Fact.key == key,
            Fact.superseded_by.is_(None),
            Fact.retracted.is_(False),
        )
        .order_by(Fact.id.desc())
        .limit(1)
    )


async def current_facts(
    session: AsyncSession, customer_id: str, scopes: Iterable[str] | None = None
) -> list[FactRecord]:
    """Facts in force (not superseded, not retracted), optionally limited to some scopes."""
    params: dict[str, object] = {"customer_id": require_customer(customer_id)}
    query = _CURRENT_ALL
    if scopes is not None:
        query, params["scopes"] = _CURRENT_IN_SCOPES, list(scopes)
    rows = await session.execute(query, params)
    return [fact_record(row) for row in rows]


async def stale_values(session: AsyncSession, customer_id: str) -> list[str]:
    """Values the customer's facts no longer hold: superseded or retracted, and not the value
    of a fact of the same key in force (a value said again later is current, not stale)."""
    rows = await session.execute(
        select(Fact.key, Fact.value, Fact.superseded_by, Fact.retracted).where(
            Fact.customer_id == require_customer(customer_id)
        )
    )
    return _stale(rows)


def _stale(rows: Iterable[AnyRow]) -> list[str]:
    current: set[tuple[str, str]] = set()
    old: set[tuple[str, str]] = set()
    for row in rows:
        in_force = row.superseded_by is None and not row.retracted
        (current if in_force else old).add((row.key, row.value))
    return sorted(value for key, value in old - current)


async def window_facts(
    session: AsyncSession, customer_id: str, scopes: Collection[str]
) -> tuple[list[FactRecord], list[str]]:
    """`current_facts` in `scopes` and `stale_values`, from one read of the customer's facts
    (every answer needs both)."""
    rows = list(await session.execute(_ALL_ROWS, {"customer_id": require_customer(customer_id)}))
    current = [
        fact_record(row)
        for row in rows
        if row.superseded_by is None and not row.retracted and row.scope in scopes
    ]
    return current, _stale(rows)


async def fact_history(session: AsyncSession, customer_id: str, key: str) -> list[FactRecord]:
    rows = await session.scalars(
        select(Fact)
        .where(Fact.customer_id == require_customer(customer_id), Fact.key == key)
        .order_by(Fact.id)
    )
    return [fact_record(row) for row in rows]


async def _owned(session: AsyncSession, customer_id: str, fact_id: int) -> Fact:
    row = await session.scalar(
        select(Fact).where(Fact.customer_id == require_customer(customer_id), Fact.id == fact_id)
    )
    if row is None:
        raise RecordNotFound(f"fact {fact_id} not found")
    return row


async def confirm_fact(
    session: AsyncSession, customer_id: str, fact_id: int, by_message_id: int
) -> FactRecord:
    row = await _owned(session, customer_id, fact_id)
    row.confirmed = True
    row.confirmed_at = utcnow()
    row.confirmed_by_message_id = by_message_id
    await session.flush()
    return fact_record(row)


async def set_pinned(
    session: AsyncSession, customer_id: str, fact_id: int, pinned: bool
) -> FactRecord:
    row = await _owned(session, customer_id, fact_id)
    row.pinned = pinned
    await session.flush()
    return fact_record(row)


async def retract_fact(session: AsyncSession, customer_id: str, fact_id: int) -> FactRecord:
    row = await _owned(session, customer_id, fact_id)
    row.retracted = True
    await session.flush()
    return fact_record(row)


async def retract_unpinned(session: AsyncSession, customer_id: str) -> None:
    """Retract every fact in force of the customer except the pinned ones (an operator's
    decision); the rows stay as history."""
    await session.execute(
        update(Fact)
        .where(
            Fact.customer_id == require_customer(customer_id),
            Fact.pinned.is_(False),
            Fact.retracted.is_(False),
            Fact.superseded_by.is_(None),
        )
        .values(retracted=True)
    )
