"""Reading sessions (`read_sessions`): each statement on its own, no transaction around them,
on the same pool as the writing sessions."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from sqlalchemy import func, select, text

from gateway.storage.engine import make_engine, make_sessionmaker, read_sessions
from gateway.storage.migrate import upgrade
from gateway.storage.models import Customer
from tests.conftest import DatabaseUnderTest
from tests.support.databases import POSTGRES_URL, postgres_reachable, unavailable


async def test_a_read_on_sqlite_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    """A writing session takes SQLite's write lock at BEGIN; a reading one takes none, so a
    window is read while a lot is being stored, from the last committed rows."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'reads.db'}"
    engine = make_engine(url)
    await upgrade(engine)
    sessions = make_sessionmaker(engine)
    try:
        async with sessions.begin() as writing:
            writing.add(Customer(id="c-uncommitted"))
            await writing.flush()
            async with read_sessions(sessions)() as reading:
                count = await asyncio.wait_for(
                    reading.scalar(select(func.count()).select_from(Customer)), 2.0
                )
        assert count == 0  # the writer's row is not committed yet
    finally:
        await engine.dispose()


async def test_each_statement_of_a_read_is_its_own_transaction_on_postgresql() -> None:
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    engine = make_engine(POSTGRES_URL)
    sessions = make_sessionmaker(engine)
    xid = text("SELECT txid_current()")
    try:
        async with read_sessions(sessions)() as reading:
            first, second = await reading.scalar(xid), await reading.scalar(xid)
        assert first != second  # no BEGIN: each statement committed by itself
        async with sessions() as writing:  # the pool's other sessions keep their transaction
            assert await writing.scalar(xid) == await writing.scalar(xid)
    finally:
        await engine.dispose()


async def test_a_read_session_sees_what_was_committed(database: DatabaseUnderTest) -> None:
    engine = make_engine(database.url) if database.schema is None else database.engine()
    sessions = make_sessionmaker(engine)
    try:
        async with sessions.begin() as writing:
            writing.add(Customer(id="c-read-after-commit"))
        async with read_sessions(sessions)() as reading:
            found = await reading.get(Customer, "c-read-after-commit")
        assert found is not None
    finally:
        async with sessions.begin() as writing:
            row = await writing.get(Customer, "c-read-after-commit")
            if row is not None:
                await writing.delete(row)
        await engine.dispose()


async def test_a_read_cancelled_at_any_point_on_sqlite_returns_its_connection(
    tmp_path: Path,
) -> None:
    """A background task cancelled in the middle of a read (a process stopping) gives its
    connection back: none is left checked out for the garbage collector to find later."""
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'cancelled.db'}")
    await upgrade(engine)
    reads = read_sessions(make_sessionmaker(engine))

    async def read() -> None:
        async with reads() as reading:
            await reading.scalar(select(func.count()).select_from(Customer))

    try:
        for yields in range(12):  # cancelled after 0, 1, … 11 turns of the loop
            task = asyncio.create_task(read())
            for _ in range(yields):
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            assert engine.pool.checkedout() == 0, f"left checked out after {yields} yields"  # type: ignore[attr-defined]
    finally:
        await engine.dispose()
        await _sqlite_threads_stopped()


async def _sqlite_threads_stopped() -> None:
    # A connection dropped by a cancellation is closed by aiosqlite's thread on its own time;
    # it must be done before this test's event loop closes, or the thread finds it closed.
    for thread in threading.enumerate():
        if thread.name.endswith("(_connection_worker_thread)"):
            await asyncio.to_thread(thread.join, 5.0)
