"""Failed console logins, by account and client address: what the login throttle counts."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import LoginFailure

# The columns' lengths: a longer username or address is cut, not refused.
ACCOUNT_CHARS = 200
CLIENT_CHARS = 64


async def record_failure(session: AsyncSession, account: str, client: str, at: datetime) -> None:
    session.add(
        LoginFailure(account=account[:ACCOUNT_CHARS], client=client[:CLIENT_CHARS], failed_at=at)
    )
    await session.flush()


async def failures_since(
    session: AsyncSession, *, account: str, client: str, since: datetime
) -> tuple[list[datetime], list[datetime]]:
    """The times of the failures since `since`: the account's, then the client address's."""
    by_account = await session.scalars(
        select(LoginFailure.failed_at).where(
            LoginFailure.account == account[:ACCOUNT_CHARS], LoginFailure.failed_at >= since
        )
    )
    by_client = await session.scalars(
        select(LoginFailure.failed_at).where(
            LoginFailure.client == client[:CLIENT_CHARS], LoginFailure.failed_at >= since
        )
    )
    return sorted(by_account), sorted(by_client)


async def clear_account(session: AsyncSession, account: str) -> None:
    await session.execute(
        delete(LoginFailure).where(LoginFailure.account == account[:ACCOUNT_CHARS])
    )


async def prune(session: AsyncSession, before: datetime) -> int:
    """Drop failures older than `before` (they no longer count); how many."""
    result = await session.execute(delete(LoginFailure).where(LoginFailure.failed_at < before))
    return int(getattr(result, "rowcount", 0) or 0)
