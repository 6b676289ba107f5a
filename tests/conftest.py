"""Shared fixtures: real databases (SQLite file and PostgreSQL schema), sessions rolled back
after each test."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.support.databases import (
    DatabaseUnderTest,
    create_schema,
    drop_schema,
    migrate,
    postgres_reachable,
    unavailable,
)

# Fixtures shared by test modules in several folders (none of them autouse).
pytest_plugins = [
    "tests.support.browser",
    "tests.support.events",
    "tests.support.leftover_tasks",
    "tests.support.redis_fixture",
    "tests.support.telegram_bot",
]


@pytest.fixture(scope="session")
def sqlite_database(tmp_path_factory: pytest.TempPathFactory) -> DatabaseUnderTest:
    path: Path = tmp_path_factory.mktemp("sqlite") / "relaydesk.db"
    database = DatabaseUnderTest("sqlite", f"sqlite+aiosqlite:///{path}")
    asyncio.run(migrate(database))
    return database


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[DatabaseUnderTest]:
    why = asyncio.run(postgres_reachable())
    if why is not None:
        unavailable("PostgreSQL", why)
    from tests.support.databases import POSTGRES_URL

    schema = asyncio.run(create_schema())
    database = DatabaseUnderTest("postgresql", POSTGRES_URL, schema=schema)
    try:
        asyncio.run(migrate(database))
        yield database
    finally:
        asyncio.run(drop_schema(schema))


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest) -> DatabaseUnderTest:
    """Each storage test runs on both backends."""
    name = "sqlite_database" if request.param == "sqlite" else "postgres_database"
    result: DatabaseUnderTest = request.getfixturevalue(name)
    return result


@pytest.fixture
async def session(database: DatabaseUnderTest) -> AsyncIterator[AsyncSession]:
    """A session inside an outer transaction that is rolled back after the test."""
    engine = database.engine()
    connection = await engine.connect()
    outer = await connection.begin()
    db_session = AsyncSession(
        bind=connection, join_transaction_mode="create_savepoint", expire_on_commit=False
    )
    try:
        yield db_session
    finally:
        await db_session.close()
        await outer.rollback()
        await connection.close()
        await engine.dispose()


@pytest.fixture
async def sessions(database: DatabaseUnderTest) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions that commit, as the gateway's do (for code that opens its own transactions)."""
    engine = database.engine()
    yield async_sessionmaker(engine, expire_on_commit=False)
    await engine.dispose()
