"""The console login throttle: after `FREE_FAILURES` failed logins within `WINDOW`, for one
account or from one client address, the next attempt must wait, twice as long after every
further failure (`FIRST_WAIT`, doubling, at most `MAX_WAIT`), counted from the latest failure.

The failures live in the `login_failures` table, so every gateway process counts the same
ones. A refused attempt is not checked (no password hashing for a locked-out caller) and not
counted; a success clears the account's failures (not the address's: a stranger guessing from
that address keeps waiting). Failures older than the window are pruned on every login, failed
or not. `wait_for` is the pure rule; the rest reads and writes storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import audit, login_failures

FREE_FAILURES = 5
WINDOW = timedelta(minutes=15)
FIRST_WAIT = timedelta(seconds=30)
MAX_WAIT = timedelta(minutes=15)


def wait_for(failures: Sequence[datetime], now: datetime) -> timedelta | None:
    """How long the next attempt must wait given these failure times (all within the
    window), or None when it may go ahead."""
    if len(failures) < FREE_FAILURES:
        return None
    doublings = min(len(failures) - FREE_FAILURES, 16)
    wait = min(FIRST_WAIT * (2**doublings), MAX_WAIT)
    remaining = max(failures) + wait - now
    return remaining if remaining > timedelta(0) else None


async def retry_after(
    session: AsyncSession, account: str, client: str, now: datetime
) -> timedelta | None:
    """How long this account and address must wait before trying again, or None."""
    by_account, by_client = await login_failures.failures_since(
        session, account=account, client=client, since=now - WINDOW
    )
    waits = [w for w in (wait_for(by_account, now), wait_for(by_client, now)) if w is not None]
    return max(waits) if waits else None


async def record_failure(session: AsyncSession, account: str, client: str, now: datetime) -> None:
    """Count a failed login and audit it (the account name tried and the address, never the
    password); failures too old to count are dropped on the way."""
    await login_failures.record_failure(session, account, client, now)
    await audit.record_audit(
        session,
        actor=account[: login_failures.ACCOUNT_CHARS] or "(empty)",
        action="console_login_failed",
        reason="unknown operator or wrong password",
        subject_type="operator",
        subject_id=account[:64] or "(empty)",
        details={"client": client},
    )
    await login_failures.prune(session, now - WINDOW)


async def record_success(session: AsyncSession, account: str, now: datetime) -> None:
    """Clear the account's failures (and drop everyone's too old to count)."""
    await login_failures.clear_account(session, account)
    await login_failures.prune(session, now - WINDOW)
