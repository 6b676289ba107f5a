"""Thirty wrong passwords at once for one account from one address: every attempt is counted
before its password is checked, so exactly `FREE_FAILURES` passwords are checked (401, each
audited) and the rest are refused unchecked (429) — with the attempts counted in SQLite, in
PostgreSQL, and in Redis."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gateway.operators.accounts import create_operator
from gateway.operators.throttle import FREE_FAILURES
from gateway.storage.models import AuditEntry
from tests.support.console import PASSWORD, USERNAME, post_login
from tests.support.stack import Stack, database_url, running_stack

PARALLEL = 30
WRONG = "not the password at all"


@asynccontextmanager
async def _gateway(counted_in: str, tmp_path: Path) -> AsyncIterator[Stack]:
    if counted_in == "postgresql":  # PostgreSQL and no Redis: the database counts
        async with (
            database_url("production", tmp_path) as url,
            running_stack("embedded", tmp_path, database=url) as running,
        ):
            yield running
        return
    backend = "embedded" if counted_in == "sqlite" else "production"
    async with running_stack(backend, tmp_path) as running:
        yield running


@pytest.fixture(params=["sqlite", "postgresql", "redis"])
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    """A gateway counting login attempts in SQLite, in PostgreSQL, or in Redis."""
    async with _gateway(request.param, tmp_path) as running:
        async with running.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        yield running


async def _checked_passwords(stack: Stack) -> int:
    """Failed logins audited: one for every wrong password actually checked."""
    async with stack.sessions()() as session:
        found = await session.scalar(
            select(func.count())
            .select_from(AuditEntry)
            .where(AuditEntry.action == "console_login_failed")
        )
    return int(found or 0)


async def test_thirty_parallel_wrong_passwords_get_only_five_checked(stack: Stack) -> None:
    answers = await asyncio.gather(
        *(post_login(stack.client, USERNAME, WRONG) for _ in range(PARALLEL))
    )
    statuses = Counter(answer.status for answer in answers)
    assert statuses == {401: FREE_FAILURES, 429: PARALLEL - FREE_FAILURES}
    assert await _checked_passwords(stack) == FREE_FAILURES
    refused = [answer for answer in answers if answer.status == 429]
    assert all(int(answer.retry_after or 0) >= 1 for answer in refused)
    # The account stays locked from this address: even the right password is not checked.
    after = await post_login(stack.client, USERNAME, PASSWORD)
    assert after.status == 429
    assert await _checked_passwords(stack) == FREE_FAILURES
