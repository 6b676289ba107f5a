"""A closed episode whose "closed" job was lost still gets its final summary: the sweep finds
closed episodes with spoken messages past their summary pointer and queues them again
(SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.owed_summaries import LOOKBACK, owed_final_summary, queue_owed_summaries
from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.worker import MemoryWorker
from gateway.storage.repositories import summaries
from tests.support.databases import DatabaseUnderTest
from tests.support.stored_conversations import COUNTER, store_episode

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
LINES = [
    ("user", "Oi, meu pedido PED-4471 ainda não chegou."),
    ("assistant", "Vou verificar o pedido PED-4471 para você."),
    ("user", "Meu e-mail é ana.souza@example.org, pode mandar por lá."),
    ("assistant", "Combinado, escrevo para ana.souza@example.org."),
]


@pytest.fixture
async def worker(database: DatabaseUnderTest) -> AsyncIterator[MemoryWorker]:
    engine = database.engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    yield worker
    await worker.close()
    await engine.dispose()


async def _episode(session: AsyncSession, *, ended: datetime | None) -> tuple[str, str, list[int]]:
    """An episode started an hour before it ended (or before NOW, if still open)."""
    stored = await store_episode(
        session, LINES, started_at=(ended or NOW) - timedelta(hours=1), closed_at=ended
    )
    return stored.customer_id, stored.episode_id, stored.message_ids


async def _owed(worker: MemoryWorker) -> set[str]:
    async with worker.sessions() as session:
        return {episode for _, episode in await owed_final_summary(session, since=NOW - LOOKBACK)}


async def test_only_recently_closed_episodes_without_their_final_summary_are_owed(
    worker: MemoryWorker,
) -> None:
    async with worker.sessions.begin() as session:
        _, lost, _ = await _episode(session, ended=NOW - timedelta(minutes=10))
        _, still_open, _ = await _episode(session, ended=None)
        _, long_ago, _ = await _episode(session, ended=NOW - LOOKBACK - timedelta(hours=1))
        done_customer, done, _ = await _episode(session, ended=NOW - timedelta(minutes=20))
    await worker.handle(CompactionJob(done_customer, done, "closed"))

    assert await _owed(worker) == {lost}
    assert still_open not in await _owed(worker) and long_ago not in await _owed(worker)

    queued = await queue_owed_summaries(worker.sessions, worker.queue, now=lambda: NOW)
    assert queued == 1
    worker.start(owed_sweep_every_s=None)
    assert isinstance(worker.queue, InProcessQueue)
    await worker.queue.drained()

    assert await _owed(worker) == set()
    assert await queue_owed_summaries(worker.sessions, worker.queue, now=lambda: NOW) == 0


async def test_the_periodic_sweep_gives_a_lost_closed_episode_its_final_summary(
    worker: MemoryWorker,
) -> None:
    # Closed a minute ago (by the real clock: the periodic sweep reads it).
    ended = datetime.now(UTC) - timedelta(minutes=1)
    async with worker.sessions.begin() as session:
        customer_id, episode_id, ids = await _episode(session, ended=ended)

    worker.start(owed_sweep_every_s=0.05)
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        async with worker.sessions() as session:
            summary = await summaries.episode_summary(session, customer_id, episode_id)
        if summary is not None:
            break
        assert asyncio.get_running_loop().time() < deadline, "no final summary was written"
        await asyncio.sleep(0.05)
    assert summary.last_message_id == ids[-1]  # final: nothing kept back
    await asyncio.sleep(0.2)  # a few more sweeps: the episode is not compacted again
    async with worker.sessions() as session:
        traces = await summaries.list_traces(session, customer_id)
    assert len(traces) == 1
