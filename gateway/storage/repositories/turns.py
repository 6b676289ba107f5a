"""Turns (one per inbound message) and the conversation fences that refuse stale writers."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Table, Update, bindparam, exists, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.models import UNDELIVERED, TurnRow
from gateway.storage.records import MessageRecord, NewTurn, PendingTurn, TurnRecord, WindowState
from gateway.storage.repositories.bound_lists import in_bounded_shapes, values_in
from gateway.storage.repositories.messages import message_from
from gateway.storage.repositories.tables import (
    CONVERSATIONS,
    FENCES,
    IDENTITIES,
    MESSAGES,
    TURNS,
    AnyRow,
)
from gateway.storage.updates import DeliveryOutcome, TurnOutcome
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef

_INSERT = TURNS.insert().returning(TURNS.c.id)
_INSERT_MANY = TURNS.insert().returning(TURNS.c.id, sort_by_parameter_order=True)
# Plain rows of the table, not ORM objects: the answer path reads and writes a turn several
# times per reply.
_NEXT_PENDING = (
    select(TURNS)
    .where(TURNS.c.conversation_key == bindparam("key"), TURNS.c.status == "pending")
    .order_by(TURNS.c.inbound_message_id)
    .limit(1)
)
# The answer step's read of its pending turns: the turn, its inbound message (columns labelled
# "m_<name>"), the sender identity's key, who answers the conversation and its WhatsApp window,
# in one statement; usually only the next one.
_PENDING_WITH_INBOUND = (
    select(
        TURNS,
        *(column.label(f"m_{column.name}") for column in MESSAGES.c),
        IDENTITIES.c.external_id.label("identity_key"),
        CONVERSATIONS.c.owner.label("conversation_owner"),
        CONVERSATIONS.c.last_inbound_at.label("conversation_last_inbound_at"),
        CONVERSATIONS.c.window_closed_at.label("conversation_window_closed_at"),
    )
    .select_from(
        TURNS.join(MESSAGES, MESSAGES.c.id == TURNS.c.inbound_message_id)
        .outerjoin(IDENTITIES, IDENTITIES.c.id == MESSAGES.c.identity_id)
        .outerjoin(CONVERSATIONS, CONVERSATIONS.c.conversation_key == TURNS.c.conversation_key)
    )
    .where(TURNS.c.conversation_key == bindparam("key"), TURNS.c.status == "pending")
    .order_by(TURNS.c.inbound_message_id)
)
_NEXT_PENDING_WITH_INBOUND = _PENDING_WITH_INBOUND.limit(1)
_FENCE = select(FENCES.c.fence).where(FENCES.c.conversation_key == bindparam("key"))
# Whether a drain has work, the fence its lock must pass and whether a reply is still to be
# delivered (settled first, `gateway.turns.delivery_order`): one statement per kick.
_DRAIN_CHECK = select(
    _FENCE.scalar_subquery(),
    exists()
    .where(TURNS.c.conversation_key == bindparam("key"), TURNS.c.status == "pending")
    .label("pending"),
    exists()
    .where(TURNS.c.conversation_key == bindparam("key"), text(UNDELIVERED))
    .label("undelivered"),
)


def turn_record(row: TurnRow | AnyRow) -> TurnRecord:
    """From an ORM row, or a Core row of the turns table (the same attribute names)."""
    return TurnRecord(
        id=row.id,
        inbound_message_id=row.inbound_message_id,
        customer_id=row.customer_id,
        episode_id=row.episode_id,
        conversation_key=row.conversation_key,
        status=row.status,
        reply_message_id=row.reply_message_id,
        provider=row.provider,
        model=row.model,
        prompt_tokens=row.prompt_tokens,
        completion_tokens=row.completion_tokens,
        cached_tokens=row.cached_tokens,
        attempts=row.attempts,
        report=row.report,
        error=row.error,
        delivery_status=row.delivery_status,
        delivery_attempts=row.delivery_attempts,
        delivery_lease_until=row.delivery_lease_until,
        tenant=TenantRef.decode(row.tenant),
    )


async def create_operator_turn(
    session: AsyncSession, message: MessageRecord, conversation_key: str, lease: timedelta
) -> TurnRecord:
    """The delivery record of an operator's message: a turn whose inbound message and reply
    are the message itself (status "operator"; never pending, so never answered), its
    delivery lease taken for the send that follows."""
    now = utcnow()
    values = _turn_values(
        NewTurn(
            message.id, message.customer_id, message.episode_id, conversation_key, message.tenant
        ),
        now,
    )
    values.update(
        status="operator",
        reply_message_id=message.id,
        delivery_status="sending",
        delivery_lease_until=now + lease,
    )
    row = (await session.execute(TURNS.insert().values(values).returning(*TURNS.c))).one()
    return turn_record(row)


async def create_turn(
    session: AsyncSession,
    *,
    inbound_message_id: int,
    customer_id: str,
    episode_id: str,
    conversation_key: str,
    tenant: TenantRef = DEFAULT_TENANT,
) -> TurnRecord:
    """A pending turn for a stored inbound message (one INSERT … RETURNING)."""
    new = NewTurn(inbound_message_id, customer_id, episode_id, conversation_key, tenant)
    now = utcnow()
    inserted = await session.execute(_INSERT, _turn_values(new, now))
    return _pending(int(inserted.scalar_one()), new)


async def create_turns(session: AsyncSession, news: Sequence[NewTurn]) -> list[TurnRecord]:
    """`create_turn` for several messages in a few statements (`in_bounded_shapes`), ids in
    list order."""
    if not news:
        return []
    now = utcnow()
    ids: list[int] = []
    for chunk in in_bounded_shapes([_turn_values(new, now) for new in news]):
        ids.extend((await session.execute(_INSERT_MANY, chunk)).scalars().all())
    return [_pending(int(turn_id), new) for turn_id, new in zip(ids, news, strict=True)]


def _turn_values(new: NewTurn, now: datetime) -> dict[str, Any]:
    return {
        "inbound_message_id": new.inbound_message_id,
        "customer_id": new.customer_id,
        "episode_id": new.episode_id,
        "conversation_key": new.conversation_key,
        "tenant": new.tenant.encode(),
        "status": "pending",
        "created_at": now,
        "updated_at": now,
    }


def _pending(turn_id: int, new: NewTurn) -> TurnRecord:
    return TurnRecord(
        id=turn_id,
        inbound_message_id=new.inbound_message_id,
        customer_id=new.customer_id,
        episode_id=new.episode_id,
        conversation_key=new.conversation_key,
        status="pending",
        reply_message_id=None,
        provider=None,
        model=None,
        prompt_tokens=0,
        completion_tokens=0,
        cached_tokens=0,
        attempts=0,
        report=None,
        error=None,
        delivery_status=None,
        delivery_attempts=0,
        tenant=new.tenant,
    )


async def turn_for_message(session: AsyncSession, inbound_message_id: int) -> TurnRecord | None:
    row = await session.scalar(
        select(TurnRow).where(TurnRow.inbound_message_id == inbound_message_id)
    )
    return turn_record(row) if row else None


async def next_pending(session: AsyncSession, conversation_key: str) -> TurnRecord | None:
    """The oldest unanswered turn of a conversation (arrival order = message id order)."""
    row = (await session.execute(_NEXT_PENDING, {"key": conversation_key})).first()
    return turn_record(row) if row else None


async def next_pending_turn(session: AsyncSession, conversation_key: str) -> PendingTurn | None:
    """`next_pending` with the turn's inbound message and its sender's identity key."""
    row = (await session.execute(_NEXT_PENDING_WITH_INBOUND, {"key": conversation_key})).first()
    return _pending_turn(row) if row is not None else None


async def pending_turns(
    session: AsyncSession, conversation_key: str, *, limit: int
) -> list[PendingTurn]:
    """`next_pending_turn` for the conversation's first `limit` pending turns, in order."""
    statement = _PENDING_WITH_INBOUND.limit(limit)
    rows = await session.execute(statement, {"key": conversation_key})
    return [_pending_turn(row) for row in rows]


async def mark_batched(session: AsyncSession, turn_ids: Sequence[int]) -> int:
    """Mark pending turns answered together with a later one of their conversation (status
    "batched", no reply of their own); returns how many were still pending."""
    if not turn_ids:
        return 0
    result = await session.execute(
        TURNS.update()
        .where(values_in(session, TURNS.c.id, turn_ids), TURNS.c.status == "pending")
        .values(status="batched", updated_at=utcnow())
    )
    return int(result.rowcount)  # type: ignore[attr-defined]


def _pending_turn(row: AnyRow) -> PendingTurn:
    values = row._mapping
    return PendingTurn(
        turn=turn_record(row),
        inbound=message_from(lambda name: values[f"m_{name}"]),
        identity_key=row.identity_key,
        owner=row.conversation_owner or "bot",
        window=(
            WindowState(row.conversation_last_inbound_at, row.conversation_window_closed_at)
            if row.conversation_owner is not None
            else None
        ),
    )


async def recent_outcomes(
    session: AsyncSession, conversation_key: str, *, before_message_id: int, limit: int
) -> list[str]:
    """The statuses of the conversation's last `limit` turns the bot answered (done or failed)
    before this message, newest first."""
    rows = await session.scalars(
        select(TurnRow.status)
        .where(
            TurnRow.conversation_key == conversation_key,
            TurnRow.inbound_message_id < before_message_id,
            TurnRow.status.in_(("done", "failed")),
        )
        .order_by(TurnRow.inbound_message_id.desc())
        .limit(limit)
    )
    return list(rows)


@dataclass(frozen=True, slots=True)
class GuardedOutcome:
    """What `record_outcome_while_bot_owns` did: whether the outcome was written, and whether
    another turn of the conversation was pending then (False: the drain need not read again
    under its lock; a turn stored later is found by its check after letting the lock go)."""

    written: bool
    more_pending: bool = False


async def record_outcome_while_bot_owns(
    session: AsyncSession, turn_id: int, conversation_key: str, outcome: TurnOutcome
) -> GuardedOutcome:
    """`record_outcome`, unless an operator took the conversation or a human was asked for
    meanwhile (then nothing is set): the check rides on the reply's own UPDATE, and so does
    the look for the conversation's next pending turn, no extra round trip."""
    columns = outcome_columns(outcome)
    params = _params(turn_id, columns)
    params["key"] = conversation_key
    row = (await session.execute(_guarded_statement(frozenset(columns)), params)).first()
    if row is None:
        return GuardedOutcome(written=False)
    return GuardedOutcome(written=True, more_pending=bool(row[0]))


_OTHER_TURNS = TURNS.alias("other_turns")


@functools.lru_cache(maxsize=16)
def _guarded_statement(names: frozenset[str]) -> Update:
    more_pending = (
        exists()
        .where(
            _OTHER_TURNS.c.conversation_key == bindparam("key"),
            _OTHER_TURNS.c.status == "pending",
            # The statement's own turn still reads as pending inside it (its snapshot).
            _OTHER_TURNS.c.id != bindparam("turn_id"),
        )
        .label("more_pending")
    )
    return (
        _set_statement(names)
        .where(
            ~exists().where(
                CONVERSATIONS.c.conversation_key == bindparam("key"),
                CONVERSATIONS.c.owner != "bot",
            )
        )
        .returning(more_pending)
    )


async def pending_conversations(session: AsyncSession, limit: int = 10_000) -> list[str]:
    """Conversations with unanswered turns (after a restart, they are resumed)."""
    rows = await session.scalars(
        select(TurnRow.conversation_key)
        .where(TurnRow.status == "pending")
        .group_by(TurnRow.conversation_key)
        .limit(limit)
    )
    return list(rows)


async def record_outcome(session: AsyncSession, turn_id: int, outcome: TurnOutcome) -> None:
    """`finish_turn` without reading the turn back (the answer step has it)."""
    columns = outcome_columns(outcome)
    result = await session.execute(_set_statement(frozenset(columns)), _params(turn_id, columns))
    if not result.rowcount:  # type: ignore[attr-defined]
        raise RecordNotFound(f"turn {turn_id} not found")


async def finish_turn(session: AsyncSession, turn_id: int, outcome: TurnOutcome) -> TurnRecord:
    """Write `outcome` on the turn in one UPDATE … RETURNING."""
    columns = outcome_columns(outcome)
    statement = _finish_statement(frozenset(columns))
    row = (await session.execute(statement, _params(turn_id, columns))).first()
    if row is None:
        raise RecordNotFound(f"turn {turn_id} not found")
    return turn_record(row)


def outcome_columns(outcome: TurnOutcome) -> dict[str, object]:
    """The turn's columns `outcome` sets: its fields that are not None."""
    columns: dict[str, object] = {"status": outcome.status}
    optional: dict[str, object | None] = {
        "reply_message_id": outcome.reply_message_id,
        "provider": outcome.provider,
        "model": outcome.model,
        "attempts": outcome.attempts,
        "error": outcome.error,
        "report": dict(outcome.report) if outcome.report is not None else None,
    }
    columns.update((name, value) for name, value in optional.items() if value is not None)
    if outcome.usage is not None:
        columns["prompt_tokens"] = outcome.usage.prompt_tokens
        columns["completion_tokens"] = outcome.usage.completion_tokens
        columns["cached_tokens"] = outcome.usage.cached_tokens
    if outcome.delivery is not None:
        columns["delivery_status"] = outcome.delivery.status
        columns["delivery_lease_until"] = outcome.delivery.lease_until
    return columns


def delivery_columns(outcome: DeliveryOutcome) -> dict[str, object]:
    """The turn's columns one delivery attempt sets: its lease let go, the error if any."""
    columns: dict[str, object] = {
        "delivery_status": outcome.status,
        "delivery_attempts": outcome.attempts,
        "delivery_lease_until": None,
    }
    if outcome.error is not None:
        columns["error"] = outcome.error
    return columns


def _params(turn_id: int, columns: Mapping[str, object]) -> dict[str, object]:
    params = {f"new_{name}": value for name, value in columns.items()}
    params["turn_id"] = turn_id
    return params


@functools.lru_cache(maxsize=64)
def _set_statement(names: frozenset[str]) -> Update:
    """The UPDATE of these columns, built once per set of columns: a reply sets the same few
    each time, and building and cache-keying a statement costs more than running it."""
    unknown = names - set(TURNS.c.keys())
    if unknown:
        raise ValueError(f"not columns of turns: {sorted(unknown)}")
    return (
        TURNS.update()
        .where(TURNS.c.id == bindparam("turn_id"))
        .values({name: bindparam(f"new_{name}", type_=TURNS.c[name].type) for name in names})
    )


@functools.lru_cache(maxsize=64)
def _finish_statement(names: frozenset[str]) -> Update:
    """`_set_statement`, returning the turn."""
    return _set_statement(names).returning(*TURNS.c)


async def record_deliveries(
    session: AsyncSession, outcomes: Sequence[tuple[int, DeliveryOutcome]]
) -> None:
    """Write each turn's delivery attempt (turn id, outcome): one execution per set of
    columns."""
    by_names: dict[frozenset[str], list[dict[str, object]]] = {}
    for turn_id, outcome in outcomes:
        columns = delivery_columns(outcome)
        by_names.setdefault(frozenset(columns), []).append(_params(turn_id, columns))
    for names, rows in by_names.items():
        await session.execute(_set_statement(names), rows)


@dataclass(frozen=True, slots=True)
class DrainCheck:
    """What a drain finds before it takes the conversation's lock."""

    pending: bool  # a turn waits for its answer
    fence: int  # the last fence the database saw (`current_fence`)
    undelivered: bool  # an earlier reply is still to be delivered, or being sent


async def drain_check(session: AsyncSession, conversation_key: str) -> DrainCheck:
    row = (await session.execute(_DRAIN_CHECK, {"key": conversation_key})).one()
    return DrainCheck(pending=bool(row[1]), fence=int(row[0] or 0), undelivered=bool(row[2]))


async def current_fence(session: AsyncSession, conversation_key: str) -> int:
    value = await session.scalar(_FENCE, {"key": conversation_key})
    return int(value or 0)


async def claim_fence(session: AsyncSession, conversation_key: str, fence: int) -> bool:
    """Record `fence` as the conversation's writer, in the caller's transaction; False when a
    newer holder already wrote (the caller's lock expired and someone else took it). One
    statement whether the conversation's row exists or not."""
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    statement = _CLAIM_FENCE["postgresql" if dialect == "postgresql" else "sqlite"]
    row = (await session.execute(statement, {"key": conversation_key, "new": fence})).first()
    return row is not None


def _fence_upsert(insert: Callable[[Table], Any]) -> Any:
    """The conversation's fence row, created at `new` or raised to it; an older holder's
    claim changes nothing and returns no row."""
    statement = insert(FENCES).values(conversation_key=bindparam("key"), fence=bindparam("new"))
    return statement.on_conflict_do_update(
        index_elements=["conversation_key"],
        set_={"fence": statement.excluded.fence},
        where=FENCES.c.fence <= statement.excluded.fence,
    ).returning(FENCES.c.fence)


_CLAIM_FENCE = {"postgresql": _fence_upsert(pg_insert), "sqlite": _fence_upsert(sqlite_insert)}
