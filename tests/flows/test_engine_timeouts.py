"""PostgreSQL connections carry the configured statement and idle-in-transaction timeouts; a
statement cut by them answers 503 `database_timeout`, not a 500. SQLite has no such settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpClient
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.config import Settings
from gateway.http.middleware import error_middleware
from gateway.keys import SETTINGS
from gateway.runtime.outages import is_database_timeout, is_storage_down
from gateway.storage.engine import engine_for, make_engine
from tests.support.databases import POSTGRES_URL, postgres_reachable, unavailable
from tests.support.stack import API_KEY, running_stack

AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
async def postgres() -> AsyncIterator[str]:
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    yield POSTGRES_URL


async def _show(engine: AsyncEngine, name: str) -> str:
    async with engine.connect() as connection:
        return str(await connection.scalar(text(f"SHOW {name}")))


async def test_every_postgres_connection_gets_the_configured_timeouts(postgres: str) -> None:
    settings = Settings(
        RELAYDESK_DATABASE_URL=postgres,
        RELAYDESK_DB_STATEMENT_TIMEOUT_MS=1234,
        RELAYDESK_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS=5678,
    )
    engine = engine_for(settings)
    try:
        assert await _show(engine, "statement_timeout") == "1234ms"
        assert await _show(engine, "idle_in_transaction_session_timeout") == "5678ms"
    finally:
        await engine.dispose()


async def test_a_statement_longer_than_the_timeout_is_cut(postgres: str) -> None:
    engine = make_engine(postgres, statement_timeout_ms=100)
    try:
        async with engine.connect() as connection:
            with pytest.raises(DBAPIError) as caught:
                await connection.execute(text("SELECT pg_sleep(2)"))
        assert is_database_timeout(caught.value)
        # Retried later like an outage (a provider's webhook is answered 503, not dropped).
        assert is_storage_down(caught.value)
        async with engine.connect() as connection:  # the pool still serves
            await connection.execute(text("SELECT pg_sleep(0.01)"))
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()


async def test_a_cut_statement_answers_503_database_timeout(
    postgres: str, aiohttp_client: AiohttpClient
) -> None:
    engine = make_engine(postgres, statement_timeout_ms=100)

    async def slow(request: web.Request) -> web.Response:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT pg_sleep(2)"))
        return web.json_response({"slept": True})

    app = web.Application(middlewares=[error_middleware])
    app.router.add_get("/slow", slow)
    try:
        client = await aiohttp_client(app)
        response = await client.get("/slow")
        assert response.status == 503
        body = await response.json()
        assert body["error"] == "database_timeout"
        assert "retry" in body["detail"]
    finally:
        await engine.dispose()


async def test_sqlite_engines_take_no_server_settings(tmp_path: Path) -> None:
    settings = Settings(
        RELAYDESK_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'a.db'}",
        RELAYDESK_DB_STATEMENT_TIMEOUT_MS=1,
    )
    engine = engine_for(settings)
    try:
        async with engine.connect() as connection:  # would fail on an unknown connect argument
            assert await connection.scalar(text("SELECT 1")) == 1
    finally:
        await engine.dispose()


def test_other_database_errors_are_not_timeouts() -> None:
    assert not is_database_timeout(ValueError("x"))


async def test_a_gateway_route_held_past_the_timeout_answers_503(tmp_path: Path) -> None:
    """The real gateway on PostgreSQL (migrated at start, without the timeouts): a table locked
    by another session holds the route's INSERT until the statement timeout cuts it."""
    async with running_stack(
        "production", tmp_path, RELAYDESK_DB_STATEMENT_TIMEOUT_MS=300
    ) as stack:
        admin = create_async_engine(stack.app[SETTINGS].database_url, poolclass=NullPool)
        try:
            async with admin.connect() as holder:
                await holder.execute(text("BEGIN"))
                await holder.execute(text("LOCK TABLE campaigns IN ACCESS EXCLUSIVE MODE"))
                response = await stack.client.post(
                    "/v1/campaigns", json={"name": "natal", "messages": ["Oi"]}, headers=AUTH
                )
                assert response.status == 503
                assert (await response.json())["error"] == "database_timeout"
                await holder.execute(text("ROLLBACK"))
            again = await stack.client.post(
                "/v1/campaigns", json={"name": "natal", "messages": ["Oi"]}, headers=AUTH
            )
            assert again.status == 201
        finally:
            await admin.dispose()
