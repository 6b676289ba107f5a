"""Test databases: a migrated SQLite file and a migrated PostgreSQL schema per test run.

Under pytest-xdist every worker is its own process with its own session fixtures, so each has
its own SQLite file, PostgreSQL schema and (below) Redis database: workers never see each
other's rows or keys.

PostgreSQL is the real server at RELAYDESK_TEST_POSTGRES_URL (default: the local one). When it
cannot be reached the PostgreSQL tests are skipped with the reason — unless
RELAYDESK_TEST_REQUIRE_SERVICES=1 (CI), where that is a failure.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from devtools.bench import services
from gateway.storage.engine import make_engine
from gateway.storage.migrate import upgrade

POSTGRES_URL = os.environ.get(
    "RELAYDESK_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)


def _worker_redis_url(url: str) -> str:
    """The test Redis's database of this xdist worker (gw0 → 1, gw1 → 2, …), or `url` itself
    outside xdist: a test that flushes or counts keys sees only its own worker's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    # Databases 14 and 15 are the benchmarks' own (`test_bench_reply`): workers stay below.
    index = 1 + int(worker.removeprefix("gw")) % 13
    return urlsplit(url)._replace(path=f"/{index}").geturl()


REDIS_URL = _worker_redis_url(
    os.environ.get("RELAYDESK_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
)
REQUIRE_SERVICES = os.environ.get("RELAYDESK_TEST_REQUIRE_SERVICES") == "1"


def unavailable(what: str, why: str) -> None:
    """Skip with a clear reason, or fail where the services are required (CI)."""
    message = f"{what} is not reachable ({why})"
    if REQUIRE_SERVICES:
        pytest.fail(message + " and RELAYDESK_TEST_REQUIRE_SERVICES=1", pytrace=False)
    pytest.skip(message)


@dataclass(frozen=True, slots=True)
class DatabaseUnderTest:
    backend: str
    url: str
    schema: str | None = None

    def engine(self) -> AsyncEngine:
        """A fresh engine on the calling event loop (asyncpg connections are loop-bound)."""
        if self.schema is None:
            return make_engine(self.url)
        return create_async_engine(
            self.url,
            poolclass=NullPool,
            connect_args={"server_settings": {"search_path": self.schema}},
        )


async def postgres_reachable(url: str = POSTGRES_URL) -> str | None:
    """None when reachable, else why not."""
    return await services.postgres_unreachable(url)


async def create_schema(url: str = POSTGRES_URL) -> str:
    schema = f"rd_test_{uuid.uuid4().hex[:12]}"
    await _execute(url, f'CREATE SCHEMA "{schema}"')
    return schema


async def drop_schema(schema: str, url: str = POSTGRES_URL) -> None:
    await _execute(url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _execute(url: str, statement: str) -> None:
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.begin() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


async def migrate(database: DatabaseUnderTest) -> None:
    engine = database.engine()
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


async def create_database(url: str = POSTGRES_URL) -> str:
    """A fresh, empty PostgreSQL database for a whole app (its URL); drop it with
    `drop_database`."""
    return await services.create_database(url, "relaydesk_test_")


async def drop_database(database_url: str, url: str = POSTGRES_URL) -> None:
    await services.drop_database(url, database_url)


async def redis_reachable(url: str = REDIS_URL) -> str | None:
    """None when reachable, else why not."""
    return await services.redis_unreachable(url)


async def require_postgres_and_redis() -> None:
    """Skip (or fail, where the services are required) unless both answer."""
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable()),
    ):
        if why is not None:
            unavailable(what, why)
