"""The ledger of console login attempts: every attempt takes its place in it before its
password is checked, in one atomic step with the decision whether it may (the rule is
`throttle.refusal`). Two attempts made at once are counted one after the other, so no more
than the free ones are ever checked. A refused attempt is not counted; a checked one stays
counted as a failure unless its login succeeds, which takes back the account's attempts from
that address (`Reservation.forgive`).

The database keeps the ledger (`DatabaseLedger`: the rows of `login_failures`, counted and
added under a per-address lock), or Redis when the deployment has one (`RedisLedger`), so every
gateway process counts the same attempts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.operators import throttle
from gateway.storage.repositories import login_failures


@dataclass(frozen=True, slots=True)
class Refused:
    """The attempt must wait this long; it was not counted."""

    wait: timedelta


class Reservation(Protocol):
    """A counted attempt, whose password may now be checked."""

    async def forgive(self) -> None:
        """The login succeeded: the account's attempts from this address no longer count."""
        ...


class AttemptLedger(Protocol):
    async def reserve(self, account: str, client: str, now: datetime) -> Reservation | Refused:
        """Count an attempt for `account` from `client` (a `throttle.client_key`) unless the
        throttle says it must wait."""
        ...


@dataclass(frozen=True, slots=True)
class _DatabaseReservation:
    sessions: async_sessionmaker[AsyncSession]
    account: str
    client: str

    async def forgive(self) -> None:
        async with self.sessions.begin() as session:
            await login_failures.clear_pair(session, self.account, self.client)


@dataclass(frozen=True, slots=True)
class DatabaseLedger:
    sessions: async_sessionmaker[AsyncSession]

    async def reserve(self, account: str, client: str, now: datetime) -> Reservation | Refused:
        since = now - throttle.WINDOW
        async with self.sessions.begin() as session:
            # Counting and adding under the address's lock: attempts from one address (the only
            # ones that share its keys) take their turns.
            await login_failures.lock_client(session, client)
            counted = await login_failures.counted_since(
                session, account=account, client=client, since=since
            )
            attempts = throttle.Attempts(counted.by_client, counted.by_pair, counted.account_total)
            wait = throttle.refusal(attempts, now)
            if wait is not None:
                return Refused(wait)
            await login_failures.record_attempt(session, account, client, now)
            await login_failures.prune(session, since)
        return _DatabaseReservation(self.sessions, account, client)
