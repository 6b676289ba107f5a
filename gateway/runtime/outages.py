"""Telling a dependency that is down (retry later) from a bug: the HTTP layer answers 503 for
the first, and background loops log it as a warning instead of a traceback."""

from __future__ import annotations

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

STORAGE_DOWN = (
    OperationalError,
    PoolTimeout,
    ConnectionError,
    OSError,
    RedisConnectionError,
    RedisTimeoutError,
)

# SQLSTATEs of a PostgreSQL server that is gone, restarting or full: class 08 (connection
# exception, e.g. a pooled connection cut by a restart), 57P01-57P05 (shut down, crashed, not yet
# accepting connections while it recovers) and 53300 (too many connections). The asyncpg driver
# reports most of them as a plain DBAPIError, not an OperationalError.
UNAVAILABLE_SQLSTATE_CLASSES = ("08", "57P")
UNAVAILABLE_SQLSTATES = frozenset({"53300"})


# 57014: PostgreSQL cancelled the statement (its `statement_timeout`); 25P03: it ended a session
# left idle inside a transaction (`idle_in_transaction_session_timeout`).
TIMEOUT_SQLSTATES = frozenset({"57014", "25P03"})


def is_database_timeout(exc: BaseException) -> bool:
    """The database cut a statement or transaction that ran past its configured timeout."""
    if not isinstance(exc, DBAPIError):
        return False
    return getattr(exc.orig, "sqlstate", None) in TIMEOUT_SQLSTATES


def is_storage_down(exc: BaseException) -> bool:
    """The database or Redis cannot be reached right now, or cut a statement that ran too
    long: the request may succeed later."""
    if isinstance(exc, STORAGE_DOWN):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated or is_database_timeout(exc):
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return isinstance(sqlstate, str) and (
        sqlstate.startswith(UNAVAILABLE_SQLSTATE_CLASSES) or sqlstate in UNAVAILABLE_SQLSTATES
    )
