"""One process at a time for a kind of background work, by a PostgreSQL advisory lock.

`sole_worker` takes a session-level advisory lock named for the work and the schema on a
connection of its own, outside any transaction, and holds it for the block: the other
processes see it taken and skip their turn, and it goes with the connection if the process
dies. SQLite serves one process: there the block always runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["sole_worker"]

_KEY = "hashtext(:name || ':' || current_schema())"
_TRY = text(f"SELECT pg_try_advisory_lock({_KEY})")
_END = text(f"SELECT pg_advisory_unlock({_KEY})")


@asynccontextmanager
async def sole_worker(engine: AsyncEngine, name: str) -> AsyncIterator[bool]:
    """Whether this process is the one doing the work ``name``, for the block: on PostgreSQL,
    whether it took the lock; on SQLite always."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    async with engine.connect() as connection:
        await connection.execution_options(isolation_level="AUTOCOMMIT")
        held = bool(await connection.scalar(_TRY, {"name": name}))
        try:
            yield held
        finally:
            if held:
                try:
                    await connection.execute(_END, {"name": name})
                except BaseException:
                    # A connection back in the pool must not keep the lock: closed instead.
                    await connection.invalidate()
                    raise
