"""The login attempt ledgers, each on its real store (the database on SQLite and PostgreSQL,
Redis): the same rule whichever counts — an attempt counted before it is checked, refused ones
not counted, waits that double, a success forgiving only its own account and address, an
account under attack giving each address one free failure — and the database counting while
Redis is unreachable."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
from redis.asyncio import Redis
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.operators import throttle
from gateway.operators.attempts import AttemptLedger, DatabaseLedger, Refused, Reservation
from gateway.operators.attempts_redis import RedisLedger
from gateway.runtime.clock import utcnow
from gateway.storage.models import LoginFailure
from tests.support.databases import REDIS_URL, redis_reachable, unavailable


@pytest.fixture(params=["database", "redis"])
async def ledger(
    request: pytest.FixtureRequest, sessions: async_sessionmaker[AsyncSession]
) -> AsyncIterator[AttemptLedger]:
    database = DatabaseLedger(sessions)
    if request.param == "database":
        yield database
        return
    why = await redis_reachable()
    if why is not None:
        unavailable("Redis", why)
    redis = Redis.from_url(REDIS_URL)
    try:
        yield RedisLedger(redis, fallback=database, prefix=f"test:{uuid.uuid4().hex}:login")
    finally:
        await redis.aclose()


def _unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def _reserved(ledger: AttemptLedger, account: str, client: str, at: datetime) -> Reservation:
    outcome = await ledger.reserve(account, client, at)
    assert not isinstance(outcome, Refused), f"refused for {outcome.wait}"
    return outcome


async def _refused(ledger: AttemptLedger, account: str, client: str, at: datetime) -> timedelta:
    outcome = await ledger.reserve(account, client, at)
    assert isinstance(outcome, Refused), "counted, not refused"
    return outcome.wait


async def test_the_sixth_attempt_waits_and_every_failure_after_doubles_it(
    ledger: AttemptLedger,
) -> None:
    account, client, start = _unique("ana"), _unique("10.1"), utcnow()
    for second in range(throttle.FREE_FAILURES):
        await _reserved(ledger, account, client, start + timedelta(seconds=second))
    latest = start + timedelta(seconds=throttle.FREE_FAILURES - 1)
    now = latest + timedelta(seconds=1)
    assert await _refused(ledger, account, client, now) == throttle.FIRST_WAIT - (now - latest)
    # Refused attempts are not counted: the wait stays what it was.
    for _ in range(3):
        assert await _refused(ledger, account, client, now) == throttle.FIRST_WAIT - (now - latest)
    latest += throttle.FIRST_WAIT
    await _reserved(ledger, account, client, latest)
    now = latest + timedelta(seconds=1)
    assert await _refused(ledger, account, client, now) == 2 * throttle.FIRST_WAIT - (now - latest)
    # The address waits for any account.
    assert await _refused(ledger, _unique("bob"), client, now) > timedelta(0)
    # Once the window has passed, nothing of it counts.
    await _reserved(ledger, account, client, latest + throttle.WINDOW + timedelta(seconds=1))


async def test_a_success_forgives_its_account_from_its_address_only(ledger: AttemptLedger) -> None:
    ana, bob, here, there, now = (
        _unique("ana"),
        _unique("bob"),
        _unique("x"),
        _unique("y"),
        utcnow(),
    )
    for _ in range(3):
        succeeded = await _reserved(ledger, ana, here, now)
    await _reserved(ledger, bob, here, now)
    for _ in range(2):
        await _reserved(ledger, ana, there, now)
    await succeeded.forgive()
    # Here: bob's failure is left, four more are free.
    for _ in range(throttle.FREE_FAILURES - 1):
        await _reserved(ledger, ana, here, now)
    assert await _refused(ledger, ana, here, now) > timedelta(0)
    # There: both failures are left, three more are free.
    for _ in range(throttle.FREE_FAILURES - 2):
        await _reserved(ledger, ana, there, now)
    assert await _refused(ledger, ana, there, now) > timedelta(0)


async def test_an_account_under_attack_gets_one_free_failure_per_address(
    ledger: AttemptLedger,
) -> None:
    ana, start = _unique("ana"), utcnow() - throttle.WINDOW / 2
    for index in range(throttle.ACCOUNT_GUARD):
        await _reserved(ledger, ana, f"{_unique('bot')}", start + timedelta(milliseconds=index))
    now, fresh = utcnow(), _unique("z")
    await _reserved(ledger, ana, fresh, now)
    assert await _refused(ledger, ana, fresh, now) == throttle.FIRST_WAIT
    # Every other account from that address still has its free failures.
    await _reserved(ledger, _unique("bob"), fresh, now)
    # And the first attempt from any other address is checked.
    await _reserved(ledger, ana, _unique("home"), now)


async def test_without_redis_the_database_counts(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    nowhere = Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    try:
        ledger = RedisLedger(nowhere, fallback=DatabaseLedger(sessions))
        account, client, now = _unique("ana"), _unique("10.2"), utcnow()
        for _ in range(throttle.FREE_FAILURES):
            reserved = await _reserved(ledger, account, client, now)
        assert await _refused(ledger, account, client, now) == throttle.FIRST_WAIT
        async with sessions() as session:
            stored = await session.scalar(
                select(func.count())
                .select_from(LoginFailure)
                .where(LoginFailure.account == account)
            )
        assert stored == throttle.FREE_FAILURES
        await reserved.forgive()  # the database's reservation: forgiven there
        await _reserved(ledger, account, client, now)
    finally:
        await nowhere.aclose()
