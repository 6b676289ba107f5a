"""Engine and session factory for the configured database (SQLite or PostgreSQL)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

# A PostgreSQL server that does not answer must fail a request quickly (503, the provider
# retries), not hold it for asyncpg's default 60 s; the pool wait is bounded the same way.
CONNECT_TIMEOUT_S = 5.0
POOL_TIMEOUT_S = 10.0


def make_engine(url: str, *, echo: bool = False) -> AsyncEngine:
    """Build an engine; SQLite gets WAL, foreign keys and a busy timeout for concurrent writers."""
    if url.startswith("sqlite"):
        engine = create_async_engine(url, echo=echo, connect_args={"timeout": 30})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return engine
    # pool_pre_ping: a pooled connection cut by a database restart is replaced at checkout
    # instead of failing the request that drew it.
    return create_async_engine(
        url,
        echo=echo,
        pool_size=10,
        max_overflow=10,
        pool_pre_ping=True,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args={"timeout": CONNECT_TIMEOUT_S},
    )


def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    # The sqlite3 module's own transaction handling breaks SAVEPOINT; SQLAlchemy emits BEGIN.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    # IMMEDIATE takes the write lock up front: a deferred transaction that reads and then
    # writes fails at once with SQLITE_BUSY when another writer got in between, instead of
    # waiting its turn under the busy timeout.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
