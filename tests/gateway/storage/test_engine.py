"""The PostgreSQL engine's pool: a connection cut by the server (a database restart) is
replaced at checkout, whether it sat idle (pinged) or was used moments ago (its socket is
seen closed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.storage.engine import PREPARED_STATEMENTS, make_engine
from tests.support.databases import POSTGRES_URL, postgres_reachable, unavailable

_PID = text("SELECT pg_backend_pid()")


@pytest.fixture
async def admin() -> AsyncIterator[AsyncEngine]:
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    engine = create_async_engine(POSTGRES_URL, poolclass=NullPool)
    yield engine
    await engine.dispose()


async def _cut(admin: AsyncEngine, pid: int) -> None:
    """End the server side of a connection, as a restart does."""
    async with admin.connect() as connection:
        await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    await asyncio.sleep(0.1)  # the server closes the socket


async def test_a_connection_cut_while_idle_is_replaced_at_checkout(admin: AsyncEngine) -> None:
    engine = make_engine(POSTGRES_URL, ping_idle_s=0.05)
    try:
        async with engine.connect() as connection:
            first = await connection.scalar(_PID)
        await _cut(admin, int(first))
        async with engine.connect() as connection:  # idle past 0.05 s: pinged, then replaced
            second = await connection.scalar(_PID)
        assert second != first
    finally:
        await engine.dispose()


async def test_a_connection_the_server_closed_is_replaced_without_a_ping(
    admin: AsyncEngine,
) -> None:
    engine = make_engine(POSTGRES_URL, ping_idle_s=60.0)  # never idle long enough to be pinged
    try:
        async with engine.connect() as connection:
            first = await connection.scalar(_PID)
        await _cut(admin, int(first))  # the server ends it and closes the socket
        async with engine.connect() as connection:
            assert await connection.scalar(_PID) != first
    finally:
        await engine.dispose()


async def test_each_connection_keeps_every_hot_statement_prepared(admin: AsyncEngine) -> None:
    # 100 by default: the flow's statements (a few dozen, times the sizes of its multi-row
    # inserts and IN lists) would evict each other and be prepared again on every use.
    engine = make_engine(POSTGRES_URL)
    try:
        async with engine.connect() as connection:
            raw = await connection.get_raw_connection()
            cache = raw.dbapi_connection._prepared_statement_cache  # type: ignore[union-attr]
            assert cache.capacity == PREPARED_STATEMENTS >= 500
    finally:
        await engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_a_failed_statement_never_shows_its_parameters(backend: str, tmp_path: Path) -> None:
    # A statement's error is logged with its traceback: a customer's message must not be in it.
    if backend == "postgresql":
        why = await postgres_reachable()
        if why is not None:
            unavailable("PostgreSQL", why)
    url = POSTGRES_URL if backend == "postgresql" else f"sqlite+aiosqlite:///{tmp_path / 'e.db'}"
    engine = make_engine(url)
    try:
        async with engine.connect() as connection:
            with pytest.raises(DBAPIError) as raised:
                await connection.execute(
                    text("SELECT no_such_column WHERE :said = ''"),
                    {"said": "meu cpf é 123.456.789-09"},
                )
    finally:
        await engine.dispose()
    assert "no_such_column" in str(raised.value)
    assert "123.456" not in str(raised.value) and "hidden" in str(raised.value)
