"""The console login throttle: five failures in fifteen minutes from one client address (for
any accounts) and the next attempt from there waits (429, Retry-After, said on the page), twice
as long after each further failure; failures are stored (every process counts them), audited
without the password, cleared for the account and address by a success and pruned once too
old."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import TestClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.keys import SESSIONS
from gateway.operators.accounts import create_operator
from gateway.operators.throttle import FIRST_WAIT, MAX_WAIT, WINDOW, wait_for
from gateway.storage.models import AuditEntry, LoginFailure
from gateway.storage.repositories import login_failures
from tests.support.console import PASSWORD, USERNAME, csrf_of
from tests.support.shared_gateways import shared_gateways
from tests.support.stack import Stack

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WRONG = "not the password at all"


def _sessions(stack: Stack) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = stack.client.app[SESSIONS]
    return sessions


async def _attempt(
    client: TestClient,  # type: ignore[type-arg]
    username: str,
    password: str,
) -> tuple[int, str, dict[str, str]]:
    form = await client.get("/console/login")
    response = await client.post(
        "/console/login",
        data={"csrf_token": csrf_of(await form.text()), "username": username, "password": password},
        allow_redirects=False,
    )
    return response.status, await response.text(), dict(response.headers)


async def _failures(stack_or_app: Stack) -> int:
    async with _sessions(stack_or_app)() as session:
        return int(await session.scalar(select(func.count()).select_from(LoginFailure)) or 0)


async def _age_failures(stack: Stack, by: timedelta) -> None:
    """As if the failures had happened `by` earlier."""
    async with _sessions(stack).begin() as session:
        for row in await session.scalars(select(LoginFailure)):
            row.failed_at = row.failed_at - by


def test_the_wait_starts_at_the_fifth_failure_doubles_and_is_capped() -> None:
    def ago(*seconds: int) -> list[datetime]:
        return [NOW - timedelta(seconds=s) for s in seconds]

    assert wait_for(ago(1, 2, 3, 4), NOW) is None
    assert wait_for(ago(10, 20, 30, 40, 50), NOW) == FIRST_WAIT - timedelta(seconds=10)
    assert wait_for(ago(0, 20, 30, 40, 50, 60), NOW) == FIRST_WAIT * 2
    assert wait_for(ago(0, 1, 2, 3, 4, 5, 6), NOW) == FIRST_WAIT * 4
    assert wait_for(ago(*range(40)), NOW) == MAX_WAIT
    assert wait_for(ago(31, 40, 50, 60, 70), NOW) is None  # the wait is over


async def test_attempts_are_stored_counted_cleared_and_pruned(session: AsyncSession) -> None:
    account = "throttle-" + str(id(session))
    for minutes in (1, 2, 20):
        await login_failures.record_attempt(
            session, account, "10.0.0.9", NOW - timedelta(minutes=minutes)
        )
    await login_failures.record_attempt(session, "someone-else", "10.0.0.9", NOW)
    await login_failures.record_attempt(session, account, "10.0.0.10", NOW)
    await login_failures.lock_client(session, "10.0.0.9")
    counted = await login_failures.counted_since(
        session, account=account, client="10.0.0.9", since=NOW - WINDOW
    )
    assert counted.by_pair == (NOW - timedelta(minutes=2), NOW - timedelta(minutes=1))
    assert counted.by_client == (*counted.by_pair, NOW)
    assert counted.account_total == 3  # from both addresses
    assert await login_failures.prune(session, NOW - WINDOW) >= 1
    await login_failures.clear_pair(session, account, "10.0.0.9")
    counted = await login_failures.counted_since(
        session, account=account, client="10.0.0.9", since=NOW - timedelta(days=1)
    )
    assert counted.by_pair == () and counted.by_client == (NOW,)
    assert counted.account_total == 1  # the other address's attempt is not forgiven


async def test_five_wrong_passwords_lock_the_account_out_then_it_may_retry(stack: Stack) -> None:
    for _ in range(5):
        status, page, _ = await _attempt(stack.client, USERNAME, WRONG)
        assert status == 401 and "wrong password" in page
    # Locked: even the right password is not checked now.
    status, page, headers = await _attempt(stack.client, USERNAME, PASSWORD)
    assert status == 429
    assert 25 <= int(headers["Retry-After"]) <= 30
    assert "Too many failed logins" in page and "seconds" in page
    assert await _failures(stack) == 5  # the refused attempt is not counted

    async with _sessions(stack)() as session:
        audited = list(
            await session.scalars(
                select(AuditEntry).where(AuditEntry.action == "console_login_failed")
            )
        )
    assert len(audited) == 5
    assert all(entry.subject_id == USERNAME and "client" in entry.details for entry in audited)
    assert WRONG not in str([(e.details, e.reason, e.actor) for e in audited])

    await _age_failures(stack, FIRST_WAIT)
    status, _, headers = await _attempt(stack.client, USERNAME, PASSWORD)
    assert status == 303 and headers["Location"] == "/console"
    assert await _failures(stack) == 0  # a success clears the account's failures


async def test_a_failure_after_the_wait_doubles_it(stack: Stack) -> None:
    for _ in range(5):
        await _attempt(stack.client, USERNAME, WRONG)
    await _age_failures(stack, FIRST_WAIT)
    status, _, _ = await _attempt(stack.client, USERNAME, WRONG)
    assert status == 401
    status, _, headers = await _attempt(stack.client, USERNAME, PASSWORD)
    assert status == 429 and 55 <= int(headers["Retry-After"]) <= 60


async def test_guessing_many_accounts_from_one_address_locks_the_address(stack: Stack) -> None:
    for index in range(5):
        status, _, _ = await _attempt(stack.client, f"guess-{index}", WRONG)
        assert status == 401
    status, _, headers = await _attempt(stack.client, USERNAME, PASSWORD)
    assert status == 429 and "Retry-After" in headers


async def test_failures_older_than_the_window_no_longer_count(stack: Stack) -> None:
    for _ in range(5):
        await _attempt(stack.client, USERNAME, WRONG)
    await _age_failures(stack, WINDOW + timedelta(seconds=1))
    status, _, _ = await _attempt(stack.client, USERNAME, WRONG)
    assert status == 401
    assert await _failures(stack) == 1  # the old ones were pruned with this failure


async def test_a_success_prunes_failures_too_old_to_count(stack: Stack) -> None:
    status, _, _ = await _attempt(stack.client, "someone-else", WRONG)
    assert status == 401
    await _age_failures(stack, WINDOW + timedelta(seconds=1))
    status, _, _ = await _attempt(stack.client, USERNAME, PASSWORD)
    assert status == 303
    assert await _failures(stack) == 0


async def test_every_process_counts_the_same_failures() -> None:
    async with shared_gateways([{}, {}]) as (first, second):
        async with first.app[SESSIONS].begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        for _ in range(5):
            status, _, _ = await _attempt(first, USERNAME, WRONG)
            assert status == 401
        status, _, headers = await _attempt(second, USERNAME, PASSWORD)
        assert status == 429 and int(headers["Retry-After"]) > 0
        async with second.app[SESSIONS]() as session:
            audited = await session.scalar(
                select(func.count())
                .select_from(AuditEntry)
                .where(AuditEntry.action == "console_login_failed")
            )
        assert audited == 5
