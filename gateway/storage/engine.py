"""Engine and session factory for the configured database (SQLite or PostgreSQL)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext import asyncio as sqlalchemy_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

if TYPE_CHECKING:
    from gateway.config import Settings

# A PostgreSQL server that does not answer must fail a request quickly (503, the provider
# retries), not hold it for asyncpg's default 60 s; the pool wait is bounded the same way.
CONNECT_TIMEOUT_S = 5.0
POOL_TIMEOUT_S = 10.0
# Statements prepared and kept per connection (the dialect keeps 100): the flow runs a few
# dozen hot statements, and each size of a multi-row insert or IN list is a statement of its
# own; past the cache, a hot one is prepared again (a round trip and a parse) each time.
PREPARED_STATEMENTS = 500
# A pooled connection idle longer than this is pinged before use (`_ping_idle_connections`).
PING_IDLE_S = 1.0
_RETURNED_AT = "relaydesk_returned_at"
AUTOCOMMIT = "AUTOCOMMIT"
# The execution option of a SQLite reading session: no BEGIN, so each statement stands alone.
_SQLITE_READS = "relaydesk_reads"


def make_engine(
    url: str,
    *,
    echo: bool = False,
    ping_idle_s: float = PING_IDLE_S,
    statement_timeout_ms: int = 0,
    idle_in_transaction_timeout_ms: int = 0,
) -> AsyncEngine:
    """Build an engine; SQLite gets WAL, foreign keys and a busy timeout for concurrent writers.
    Errors and the statements' echo never show their parameters (customer text).

    On PostgreSQL every connection is opened with `statement_timeout` and
    `idle_in_transaction_session_timeout` set (0: no limit, PostgreSQL's default), so one stuck
    query or a transaction left open never holds a pooled connection and its locks for long.
    SQLite has neither setting; its writers wait under the busy timeout instead."""
    # The factory is looked up when called: tracing (`gateway.runtime.tracing`) wraps it.
    if url.startswith("sqlite"):
        engine = sqlalchemy_asyncio.create_async_engine(
            url, echo=echo, hide_parameters=True, connect_args={"timeout": 30}
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return engine
    engine = sqlalchemy_asyncio.create_async_engine(
        url,
        echo=echo,
        # A failed statement's error (logged with its traceback) and the echo of statements
        # never print their parameters: they carry customers' messages and identifiers.
        hide_parameters=True,
        pool_size=10,
        max_overflow=10,
        pool_timeout=POOL_TIMEOUT_S,
        connect_args={
            "timeout": CONNECT_TIMEOUT_S,
            "prepared_statement_cache_size": PREPARED_STATEMENTS,
            "server_settings": postgres_timeouts(
                statement_timeout_ms, idle_in_transaction_timeout_ms
            ),
        },
    )
    _ping_idle_connections(engine.sync_engine, ping_idle_s)
    return engine


def postgres_timeouts(statement_timeout_ms: int, idle_in_transaction_ms: int) -> dict[str, str]:
    """The asyncpg `server_settings` of the two timeouts (milliseconds, as PostgreSQL reads a
    bare number)."""
    return {
        "statement_timeout": str(statement_timeout_ms),
        "idle_in_transaction_session_timeout": str(idle_in_transaction_ms),
    }


def engine_for(settings: Settings) -> AsyncEngine:
    """The engine a serving process uses: the configured database with its timeouts."""
    return make_engine(
        settings.database_url,
        statement_timeout_ms=settings.db_statement_timeout_ms,
        idle_in_transaction_timeout_ms=settings.db_idle_in_transaction_timeout_ms,
    )


def _ping_idle_connections(engine: Engine, idle_s: float) -> None:
    """A pooled connection cut by a database restart is replaced at checkout instead of
    failing the request that drew it: one whose socket the server closed is replaced at once,
    one that sat in the pool longer than `idle_s` is pinged first. Not every checkout pinged
    (`pool_pre_ping`): under load connections go back and out within milliseconds, and the
    ping's three round trips (BEGIN, a query, ROLLBACK) cost as much as the statements they
    precede."""

    def returned(dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED_AT] = time.monotonic()

    def checked_out(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        is_closed = getattr(proxy.driver_connection, "is_closed", None)
        if is_closed is not None and is_closed():
            # The server closed it (a restart): the driver saw the socket end, no round trip.
            raise DisconnectionError()
        returned_at = record.info.get(_RETURNED_AT)
        if returned_at is None or time.monotonic() - returned_at < idle_s:
            return  # just opened, or just used (a cut that left the socket open shows later)
        dialect = engine.dialect
        try:
            dialect.do_ping(dbapi_connection)
        except Exception as exc:
            if isinstance(exc, dialect.loaded_dbapi.Error) and dialect.is_disconnect(
                exc, dbapi_connection, None
            ):
                # The pool drops this connection and checks out another (a new one if need be).
                raise DisconnectionError() from exc
            raise

    event.listen(engine, "checkin", returned)
    event.listen(engine, "checkout", checked_out)


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
    # waiting its turn under the busy timeout. A reading session (`read_sessions`) takes none.
    if connection.get_execution_options().get(_SQLITE_READS):
        return
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def make_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)


def read_sessions(
    sessions: async_sessionmaker[AsyncSession],
) -> async_sessionmaker[AsyncSession]:
    """Sessions on the same pool whose statements each run on their own (no BEGIN, no
    ROLLBACK): for reads that need no snapshot shared between their statements. On PostgreSQL
    a read-committed transaction gives each statement its own snapshot anyway, so such a read
    sees the same rows for two round trips less; on SQLite it takes no write lock."""
    engine: AsyncEngine = sessions.kw["bind"]
    if engine.dialect.name == "sqlite":
        # The driver already runs each statement on its own unless BEGIN is sent (see
        # `_sqlite_pragmas`); changing the isolation level would cost two trips to aiosqlite's
        # thread per session, each a point where a cancelled task leaves a connection behind.
        return async_sessionmaker(
            engine.execution_options(**{_SQLITE_READS: True}), expire_on_commit=False
        )
    return async_sessionmaker(
        engine.execution_options(isolation_level=AUTOCOMMIT), expire_on_commit=False
    )
