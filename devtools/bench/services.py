"""The PostgreSQL server and Redis the benchmarks run on: their URLs, whether they answer, and
temporary databases created next to the given one (so an app's own engine sees the schema in
``public`` without any search_path setting), empty or migrated."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from gateway.storage.engine import make_engine
from gateway.storage.migrate import upgrade

POSTGRES_URL_ENV = "RELAYDESK_BENCH_POSTGRES_URL"
REDIS_URL_ENV = "RELAYDESK_BENCH_REDIS_URL"
DEFAULT_POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
CHECK_TIMEOUT_S = 5.0


def postgres_url_from_env() -> str:
    """`POSTGRES_URL_ENV`, else the local server."""
    return os.environ.get(POSTGRES_URL_ENV, DEFAULT_POSTGRES_URL)


def redis_url_from_env() -> str:
    """`REDIS_URL_ENV`, else the local server."""
    return os.environ.get(REDIS_URL_ENV, DEFAULT_REDIS_URL)


async def postgres_unreachable(url: str) -> str | None:
    """None when the server answers ``SELECT 1``, else why not (for a skip or refusal)."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        return None
    except Exception as exc:  # any failure means: cannot use it, say why
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        await engine.dispose()


async def redis_unreachable(url: str) -> str | None:
    """None when Redis answers ``PING``, else why not."""
    from redis.asyncio import Redis

    client = Redis.from_url(url, socket_connect_timeout=2)
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await client.ping()
        return None
    except Exception as exc:  # any failure means: cannot use it, say why
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        await client.aclose()


async def services_unreachable(postgres_url: str, redis_url: str) -> str | None:
    """None when both answer, else which one does not and why."""
    for what, why in (
        ("PostgreSQL", await postgres_unreachable(postgres_url)),
        ("Redis", await redis_unreachable(redis_url)),
    ):
        if why is not None:
            return f"{what} is not reachable ({why})"
    return None


async def create_database(admin_url: str, prefix: str) -> str:
    """A new empty database ``<prefix><random>`` on ``admin_url``'s server; its URL."""
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
            # The dirty pages an earlier side left (its dropped database among them) are written
            # now, not while this side is measured. Only a superuser may; others skip it.
            with contextlib.suppress(DBAPIError):
                await connection.execute(text("CHECKPOINT"))
    finally:
        await admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


async def drop_database(admin_url: str, database_url: str) -> None:
    """Drop the database of ``database_url`` (connections to it included), through
    ``admin_url``."""
    name = make_url(database_url).database
    admin = create_async_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            try:
                await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except DBAPIError:  # servers before 13 have no FORCE; the caller closed everything
                await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    finally:
        await admin.dispose()


@asynccontextmanager
async def temporary_database(admin_url: str) -> AsyncIterator[str]:
    """Create ``relaydesk_bench_<random>`` next to ``admin_url``'s database; drop it on exit."""
    database_url = await create_database(admin_url, "relaydesk_bench_")
    try:
        yield database_url
    finally:
        await drop_database(admin_url, database_url)


@asynccontextmanager
async def migrated_database(admin_url: str) -> AsyncIterator[tuple[str, AsyncEngine]]:
    """A `temporary_database` upgraded to the newest schema, and an engine on it: (its URL, the
    engine). The engine is disposed before the database is dropped."""
    async with temporary_database(admin_url) as database_url:
        engine = make_engine(database_url)
        try:
            await upgrade(engine)
            yield database_url, engine
        finally:
            await engine.dispose()
