"""The inbox of provider webhooks (`InboxMessage`): group-committed writes, claims that keep
one sender's messages in order, and the deletes and failures that end a claim."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import InboxMessage
from gateway.storage.records import InboxDepth, InboxItem, SetAsideItem
from gateway.storage.repositories.bound_lists import (
    ByDialect,
    not_one_of,
    one_of,
    values_in,
)
from gateway.storage.repositories.tables import INBOX
from gateway.tenant_ref import DEFAULT_TENANT_ENCODED, TenantRef

# A replayed webhook whose first delivery is still waiting adds nothing; one already stored as
# a message adds a row that processing finds to be a duplicate and deletes.
_INSERT = {
    "postgresql": pg_insert(INBOX).on_conflict_do_nothing(
        index_elements=["channel", "provider_message_id"]
    ),
    "sqlite": sqlite_insert(INBOX).on_conflict_do_nothing(
        index_elements=["channel", "provider_message_id"]
    ),
}
# Claims are taken one at a time across processes, so two claimers never both see a sender
# as free and process its messages side by side (out of order).
_CLAIM_LOCK = text("SELECT pg_advisory_xact_lock(hashtext('relaydesk.inbox.claim'))")

# The senders a live claim holds: few rows, read through the partial index on claimed rows.
_HELD = (
    select(InboxMessage.thread_key)
    .distinct()
    .where(InboxMessage.claimed_until.is_not(None), InboxMessage.claimed_until >= bindparam("now"))
)
_FREE = (
    select(InboxMessage.id)
    .where(
        InboxMessage.dead_at.is_(None),
        or_(
            InboxMessage.claimed_until.is_(None),
            InboxMessage.claimed_until < bindparam("now"),
        ),
    )
    .order_by(InboxMessage.id)
    .limit(bindparam("limit"))
)
_FREE_EXCEPT = ByDialect.build(
    lambda arrays: _FREE.where(not_one_of(INBOX.c.thread_key, "held", arrays=arrays))
)
# PostgreSQL claims the free rows and reads them in one statement, after the lock (taken in a
# statement of its own: a statement's snapshot is taken when it starts, so the lock must be
# held before the held senders are read).
_HELD_CTE = _HELD.cte("held")
_FREE_CTE = _FREE.where(INBOX.c.thread_key.not_in(select(_HELD_CTE.c.thread_key))).cte("free")
_CLAIM_FREE = (
    INBOX.update()
    .where(INBOX.c.id == _FREE_CTE.c.id)
    .values(claimed_until=bindparam("until"), attempts=INBOX.c.attempts + 1)
    .returning(
        INBOX.c.id,
        INBOX.c.thread_key,
        INBOX.c.host,
        INBOX.c.tenant,
        INBOX.c.payload,
        INBOX.c.attempts,
    )
)
_CLAIMABLE = select(_FREE.with_only_columns(INBOX.c.id).order_by(None).limit(None).exists())
_CLAIMED = ByDialect.build(
    lambda arrays: (
        select(
            INBOX.c.id,
            INBOX.c.thread_key,
            INBOX.c.host,
            INBOX.c.tenant,
            INBOX.c.payload,
            INBOX.c.attempts,
        )
        .where(one_of(INBOX.c.id, "ids", arrays=arrays))
        .order_by(INBOX.c.id)
    )
)
_WAITING = select(func.count()).select_from(INBOX).where(INBOX.c.dead_at.is_(None))
_DEPTH = select(
    func.count().filter(INBOX.c.dead_at.is_(None)),
    func.min(INBOX.c.received_at).filter(INBOX.c.dead_at.is_(None)),
    func.count().filter(INBOX.c.dead_at.is_not(None)),
)


def inbox_row(
    *,
    channel: str,
    provider_message_id: str,
    thread_key: str,
    tenant: TenantRef,
    payload: dict[str, Any],
    received_at: datetime,
) -> dict[str, Any]:
    return {
        "channel": channel,
        "provider_message_id": provider_message_id,
        "thread_key": thread_key,
        # `host` still written: a processor of the previous version reads it mid-deploy.
        "host": tenant.host,
        "tenant": tenant.encode(),
        "payload": payload,
        "received_at": received_at,
        "claimed_until": None,
        "attempts": 0,
        "last_error": None,
        "dead_at": None,
    }


def _dialect(session: AsyncSession) -> str:
    bind = session.bind
    return "postgresql" if bind is not None and bind.dialect.name == "postgresql" else "sqlite"


async def add(session: AsyncSession, rows: Sequence[dict[str, Any]]) -> None:
    """Insert rows built by `inbox_row` in one statement; replays already waiting are skipped."""
    if rows:
        await session.execute(_INSERT[_dialect(session)], list(rows))


async def claimable(session: AsyncSession, *, now: datetime) -> bool:
    """Whether a claim may find rows (some waiting row is not claimed); one cheap read, so that
    a process woken for rows another process took skips the claim's transaction."""
    return bool(await session.scalar(_CLAIMABLE, {"now": now}))


async def claim(
    session: AsyncSession, *, now: datetime, lease: timedelta, limit: int
) -> list[InboxItem]:
    """Claim up to `limit` waiting rows, oldest first, none of a sender another claim holds;
    in the caller's transaction, which should commit at once."""
    if _dialect(session) == "postgresql":
        await session.execute(_CLAIM_LOCK)
        params = {"now": now, "limit": limit, "until": now + lease}
        claimed = sorted((await session.execute(_CLAIM_FREE, params)).all(), key=_by_id)
        return [_item(row) for row in claimed]
    held = list((await session.scalars(_HELD, {"now": now})).all())
    params = {"now": now, "limit": limit, "held": held}
    ids = list((await session.scalars(_FREE_EXCEPT.of(session) if held else _FREE, params)).all())
    if not ids:
        return []
    await session.execute(
        update(InboxMessage)
        .where(values_in(session, INBOX.c.id, ids))
        .values(claimed_until=now + lease, attempts=InboxMessage.attempts + 1)
        .execution_options(synchronize_session=False)
    )
    rows = await session.execute(_CLAIMED.of(session), {"ids": ids})
    return [_item(row) for row in rows]


def _by_id(row: Any) -> int:
    return int(row.id)


def _item(row: Any) -> InboxItem:
    return InboxItem(
        id=int(row.id),
        thread_key=row.thread_key,
        tenant=_tenant_of(row.tenant, row.host),
        payload=dict(row.payload),
        attempts=row.attempts,
    )


def _tenant_of(encoded: str, host: str | None) -> TenantRef:
    """A row written by a gateway of the previous version names only its host (the tenant
    column took its default): it still belongs to that host."""
    if encoded == DEFAULT_TENANT_ENCODED and host:
        return TenantRef.for_host(host)
    return TenantRef.decode(encoded)


async def remove(session: AsyncSession, ids: Sequence[int]) -> None:
    """Delete processed rows (their messages are stored)."""
    if ids:
        await session.execute(delete(InboxMessage).where(values_in(session, INBOX.c.id, ids)))


async def release(session: AsyncSession, ids: Sequence[int], *, error: str | None = None) -> None:
    """End a claim without processing: the rows are claimable again at once."""
    if ids:
        values: dict[str, Any] = {"claimed_until": None}
        if error is not None:
            values["last_error"] = error[:2000]
        await session.execute(
            update(InboxMessage).where(values_in(session, INBOX.c.id, ids)).values(**values)
        )


async def bury(session: AsyncSession, item_id: int, *, error: str, now: datetime) -> None:
    """Stop retrying a row that keeps failing (not an outage): kept for an operator to see."""
    await session.execute(
        update(InboxMessage)
        .where(InboxMessage.id == item_id)
        .values(claimed_until=None, dead_at=now, last_error=error[:2000])
    )


async def waiting(session: AsyncSession) -> int:
    """Rows not yet stored as messages (claimed or not), the buried ones left out."""
    return int(await session.scalar(_WAITING) or 0)


async def depth(session: AsyncSession) -> InboxDepth:
    """Waiting rows, the oldest one's arrival and set-aside rows, in one statement."""
    row = (await session.execute(_DEPTH)).one()
    return InboxDepth(waiting=int(row[0] or 0), oldest_waiting=row[1], set_aside=int(row[2] or 0))


def _set_aside_item(row: InboxMessage, set_aside_at: datetime) -> SetAsideItem:
    return SetAsideItem(
        id=row.id,
        channel=row.channel,
        provider_message_id=row.provider_message_id,
        thread_key=row.thread_key,
        received_at=row.received_at,
        set_aside_at=set_aside_at,
        attempts=row.attempts,
        error=row.last_error or "",
        payload=dict(row.payload),
    )


async def set_aside(session: AsyncSession, *, limit: int = 200) -> list[SetAsideItem]:
    """Rows set aside (`bury`), most recently set aside first."""
    rows = await session.scalars(
        select(InboxMessage)
        .where(InboxMessage.dead_at.is_not(None))
        .order_by(InboxMessage.dead_at.desc(), InboxMessage.id.desc())
        .limit(limit)
    )
    return [_set_aside_item(row, row.dead_at) for row in rows if row.dead_at is not None]


async def retry(session: AsyncSession, item_id: int) -> SetAsideItem | None:
    """Put a set-aside row back in line with its attempts reset, at its place (claims take rows
    in `id` order; its sender's messages stored while it was aside stay before it). Returns the
    row as it was, or None when no such row is set aside."""
    row = await session.get(InboxMessage, item_id, with_for_update=True)
    if row is None or row.dead_at is None:
        return None
    found = _set_aside_item(row, row.dead_at)
    row.dead_at = None
    row.attempts = 0
    row.claimed_until = None
    await session.flush()
    return found
