"""Operator logins on real, committing sessions: a login opens and closes, a wrong password
is counted, and the throttle refuses before checking anything."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.http.errors import TooManyRequests, Unauthorized
from gateway.operators import logins, throttle
from gateway.operators.accounts import create_operator
from gateway.operators.attempts import DatabaseLedger
from gateway.storage.repositories import audit

PASSWORD = "correct horse battery"


async def _account(sessions: async_sessionmaker[AsyncSession]) -> str:
    username = f"ops-{uuid.uuid4().hex[:12]}"
    async with sessions.begin() as session:
        await create_operator(session, username, PASSWORD)
    return username


async def test_a_login_is_found_by_its_token_until_logged_out(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    username = await _account(sessions)
    token, login = await logins.attempt_login(
        sessions, DatabaseLedger(sessions), f" {username} ", PASSWORD, "10.0.0.1"
    )
    assert login.username == username and token not in (login.csrf_token, "")
    async with sessions() as session:
        assert await logins.find_login(session, token) == login
        assert await logins.find_login(session, token + "x") is None
    assert logins.csrf_matches(login, login.csrf_token)
    assert not logins.csrf_matches(login, None) and not logins.csrf_matches(login, "wrong")
    async with sessions.begin() as session:
        await logins.log_out(session, token)
    async with sessions() as session:
        assert await logins.find_login(session, token) is None


async def test_failures_are_counted_then_throttled_even_with_the_right_password(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    username = await _account(sessions)
    client = f"client-{uuid.uuid4().hex[:8]}"
    for _ in range(throttle.FREE_FAILURES):
        with pytest.raises(Unauthorized) as wrong:
            await logins.attempt_login(
                sessions, DatabaseLedger(sessions), username, "not the password", client
            )
        assert (wrong.value.status, wrong.value.code) == (401, "unauthorized")
    with pytest.raises(TooManyRequests) as waiting:
        await logins.attempt_login(sessions, DatabaseLedger(sessions), username, PASSWORD, client)
    assert (waiting.value.status, waiting.value.code) == (429, "login_throttled")
    assert 1 <= waiting.value.retry_after_s <= throttle.FIRST_WAIT.total_seconds()
    async with sessions() as session:
        failed = await audit.list_audit(session, subject_id=username)
    assert [e.action for e in failed] == ["console_login_failed"] * throttle.FREE_FAILURES
    assert all("not the password" not in str(e.details) for e in failed)


async def test_an_unknown_operator_is_refused_like_a_wrong_password(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    with pytest.raises(Unauthorized, match="unknown operator or wrong password"):
        await logins.attempt_login(
            sessions, DatabaseLedger(sessions), f"nobody-{uuid.uuid4().hex}", PASSWORD, "10.0.0.2"
        )
