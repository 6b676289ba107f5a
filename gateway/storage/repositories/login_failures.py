"""Console login attempts by account and client address: what the login throttle counts when
the database keeps the count. A row is written before the password is checked and stays as a
failure unless the login succeeds (`clear_pair`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import LoginFailure

# The columns' lengths: a longer username or address is cut, not refused.
ACCOUNT_CHARS = 200
CLIENT_CHARS = 64


@dataclass(frozen=True, slots=True)
class Counted:
    """The attempts since some time: the client address's and the account's from that address
    (their times, oldest first), and how many the account had from anywhere."""

    by_client: tuple[datetime, ...]
    by_pair: tuple[datetime, ...]
    account_total: int


def _lock_id(client: str) -> int:
    """A signed 64-bit advisory lock id for one client address."""
    digest = hashlib.blake2b(f"relaydesk.login:{client}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def lock_client(session: AsyncSession, client: str) -> None:
    """Hold this client address's attempts still until the transaction ends, so counting them
    and adding one is a single step. PostgreSQL: a transaction-scoped advisory lock. SQLite:
    nothing to do, every transaction begins IMMEDIATE and holds the write lock already."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_advisory_xact_lock(_lock_id(client[:CLIENT_CHARS]))))


async def counted_since(
    session: AsyncSession, *, account: str, client: str, since: datetime
) -> Counted:
    account, client = account[:ACCOUNT_CHARS], client[:CLIENT_CHARS]
    recent = LoginFailure.failed_at >= since
    by_client = await session.execute(
        select(LoginFailure.account, LoginFailure.failed_at).where(
            LoginFailure.client == client, recent
        )
    )
    rows = sorted(((tried, at) for tried, at in by_client), key=lambda row: row[1])
    account_total = await session.scalar(
        select(func.count())
        .select_from(LoginFailure)
        .where(LoginFailure.account == account, recent)
    )
    return Counted(
        by_client=tuple(at for _, at in rows),
        by_pair=tuple(at for tried, at in rows if tried == account),
        account_total=int(account_total or 0),
    )


async def record_attempt(session: AsyncSession, account: str, client: str, at: datetime) -> None:
    session.add(
        LoginFailure(account=account[:ACCOUNT_CHARS], client=client[:CLIENT_CHARS], failed_at=at)
    )
    await session.flush()


async def clear_pair(session: AsyncSession, account: str, client: str) -> None:
    """Forget the account's attempts from this address (a login succeeded there)."""
    await _delete_unlocked(
        session,
        (LoginFailure.account == account[:ACCOUNT_CHARS])
        & (LoginFailure.client == client[:CLIENT_CHARS]),
    )


async def prune(session: AsyncSession, before: datetime) -> int:
    """Drop attempts older than `before` (they no longer count); how many."""
    return await _delete_unlocked(session, LoginFailure.failed_at < before)


async def _delete_unlocked(session: AsyncSession, where: ColumnElement[bool]) -> int:
    # Rows another transaction is deleting are left to it (SKIP LOCKED): two deletes that meet
    # never wait on each other, so they cannot deadlock. SQLite ignores the clause; its
    # writers take turns anyway.
    doomed = select(LoginFailure.id).where(where).with_for_update(skip_locked=True)
    result = await session.execute(delete(LoginFailure).where(LoginFailure.id.in_(doomed)))
    return int(getattr(result, "rowcount", 0) or 0)
