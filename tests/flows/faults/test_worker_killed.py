"""A real `relaydesk worker` process SIGKILLed in the middle of a compaction job: its open
transaction (facts already written, the summary not yet) is rolled back, the job stays pending
in the Redis stream, and another worker process reclaims it and applies it once — one trace, the
facts once, the summary pointer at the last compacted message.

The job is held mid-way by a row lock this test takes on the episode's summary: the worker has
read the batch, written the new facts and waits to move the summary pointer when it is killed.
The stream and group names are fixed in the worker, so a private Redis keeps other tests' jobs
out of it; a private PostgreSQL cluster keeps the shared server's connection limit out of play.
A job is reclaimed once it has been pending longer than the queue's reclaim time
(`RELAYDESK_COMPACTION_RECLAIM_MS`): the dying worker keeps the default minute, so it cannot
take its own job back; the survivor is started with one second.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from context import TiktokenCounter, load_encoding
from gateway.memory.queue import GROUP, STREAM, CompactionJob, RedisStreamQueue
from gateway.storage.engine import make_engine
from gateway.storage.migrate import upgrade
from gateway.storage.models import CompactionTrace, EpisodeSummary, Fact
from gateway.storage.records import NewMessage
from gateway.storage.repositories import customers, episodes, messages
from tests.support.databases import unavailable
from tests.support.private_postgres import PrivatePostgres
from tests.support.processes import COMMAND, clean_env, free_port

# Serial: `relaydesk worker` processes on a private PostgreSQL server, one killed.
pytestmark = pytest.mark.serial

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2026, 11, 2, 14, 0, tzinfo=UTC)
T = TypeVar("T")
# The survivor's reclaim time: a job silent this long belongs to a dead consumer.
SURVIVOR_RECLAIM_MS = 1_000

FIRST_ROUND = [
    ("user", "Oi, meu nome é Ana Souza e preciso de ajuda com uma entrega."),
    ("assistant", "Claro, Ana. Qual é o número do pedido?"),
    ("user", "É o pedido 4471, comprado semana passada."),
    ("assistant", "Obrigado, vou verificar o pedido 4471."),
]
SECOND_ROUND = [
    ("user", "Pode me responder por e-mail? Meu e-mail é ana.souza@example.org"),
    ("assistant", "Posso sim, vou escrever para ana.souza@example.org."),
    ("user", "Também tenho o pedido 5123 que ainda não chegou."),
    ("assistant", "Anotado, vou verificar o pedido 5123 também."),
]
SECOND_EMAIL = "ana.souza@example.org"


@asynccontextmanager
async def _private_redis() -> AsyncIterator[str]:
    """A throwaway redis-server on a free port (no persistence); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        unavailable("a private Redis server", "redis-server is not on PATH")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = Redis.from_url(url)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    await client.ping()
                    break
                except RedisConnectionError:
                    assert time.monotonic() < deadline, "private redis-server did not start"
                    await asyncio.sleep(0.05)
        finally:
            await client.aclose()
        yield url
    finally:
        server.terminate()
        await asyncio.to_thread(server.wait, 10)


@contextmanager
def _worker(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*COMMAND, "worker"], env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


async def _eventually(probe: Callable[[], Awaitable[T]], deadline_s: float, what: str) -> T:
    """Poll `probe()` until it returns something truthy, and return that."""
    deadline = time.monotonic() + deadline_s
    while True:
        found = await probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _append(
    engine: AsyncEngine, customer_id: str, episode_id: str, turns: list[tuple[str, str]], at: int
) -> int:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    last = 0
    async with sessions.begin() as session:
        for offset, (role, body) in enumerate(turns):
            stored = await messages.append_message(
                session,
                NewMessage(
                    customer_id,
                    episode_id,
                    "whatsapp",
                    role,
                    body,
                    COUNTER.count(body),
                    created_at=START + timedelta(seconds=at + offset),
                ),
            )
            last = stored.id
    return last


async def _state(engine: AsyncEngine, episode_id: str) -> tuple[int, int | None, list[str]]:
    """(traces, summary pointer, current fact values) of the episode's customer."""
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions() as session:
        traces = await session.scalar(
            select(func.count())
            .select_from(CompactionTrace)
            .where(CompactionTrace.episode_id == episode_id)
        )
        pointer = await session.scalar(
            select(EpisodeSummary.last_message_id).where(EpisodeSummary.episode_id == episode_id)
        )
        values = await session.scalars(
            select(Fact.value)
            .where(Fact.source_episode_id == episode_id, Fact.superseded_by.is_(None))
            .order_by(Fact.id)
        )
        return int(traces or 0), pointer, list(values)


async def _blocked_backend(engine: AsyncEngine) -> tuple[int, bool] | None:
    """(backend pid, has written facts) of a session waiting on a lock to update the summary."""
    async with engine.connect() as connection:
        row = (
            await connection.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query ILIKE 'UPDATE episode_summaries%'"
                )
            )
        ).first()
        if row is None:
            return None
        wrote_facts = await connection.scalar(
            text(
                "SELECT count(*) > 0 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
                "WHERE l.pid = :pid AND c.relname = 'facts' AND l.mode = 'RowExclusiveLock'"
            ),
            {"pid": row.pid},
        )
        return int(row.pid), bool(wrote_facts)


async def _backend_gone(engine: AsyncEngine, pid: int) -> bool:
    async with engine.connect() as connection:
        found = await connection.scalar(
            text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
        )
        return found == 0


async def _pending(redis: Redis) -> list[dict[str, object]]:
    return list(await redis.xpending_range(STREAM, GROUP, min="-", max="+", count=10))


async def _state_if(
    engine: AsyncEngine, episode_id: str, *, traces: int
) -> tuple[int, int | None, list[str]] | None:
    state = await _state(engine, episode_id)
    return state if state[0] >= traces else None


async def _none_pending(redis: Redis) -> bool:
    return not await _pending(redis)


async def test_a_worker_killed_mid_compaction_is_reclaimed_and_applied_once(
    tmp_path: Path,
) -> None:
    # A private cluster and a private Redis: nothing shared to compete with or to disturb.
    with PrivatePostgres() as postgres:
        engine = make_engine(postgres.url)
        try:
            await upgrade(engine)
            async with _private_redis() as redis_url:
                redis = Redis.from_url(redis_url)
                try:
                    env = clean_env(
                        RELAYDESK_DATABASE_URL=postgres.url,
                        RELAYDESK_REDIS_URL=redis_url,
                        RELAYDESK_LOG_LEVEL="INFO",
                    )
                    await _run(engine, redis, env, tmp_path)
                finally:
                    await redis.aclose()
        finally:
            await engine.dispose()


async def _run(engine: AsyncEngine, redis: Redis, env: dict[str, str], tmp_path: Path) -> None:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with sessions.begin() as session:
        customer = await customers.create_customer(session)
        episode = await episodes.open_episode(
            session, customer_id=customer.id, channel="whatsapp", started_at=START
        )
    first_last = await _append(engine, customer.id, episode.id, FIRST_ROUND, 0)
    queue = RedisStreamQueue(redis)
    await queue.ensure_group()

    with _worker(env, tmp_path / "dying.log") as dying:
        # An ordinary job first: the worker runs, and the episode gets its summary row.
        await queue.enqueue(CompactionJob(customer.id, episode.id, "closed"))
        first = await _eventually(
            lambda: _state_if(engine, episode.id, traces=1), 30, "the first compaction"
        )
        assert first[1] == first_last
        assert await _eventually(lambda: _none_pending(redis), 5, "the first job's ack")

        second_last = await _append(engine, customer.id, episode.id, SECOND_ROUND, 60)
        async with engine.connect() as holder:
            # Hold the summary row: the next job writes its facts, then waits here.
            transaction = await holder.begin()
            await holder.execute(
                text("SELECT id FROM episode_summaries WHERE episode_id = :id FOR UPDATE"),
                {"id": episode.id},
            )
            await queue.enqueue(CompactionJob(customer.id, episode.id, "closed"))
            backend, wrote_facts = await _eventually(
                lambda: _blocked_backend(engine), 10, "the worker to wait on the summary row"
            )
            assert wrote_facts  # mid-job: the new facts are written, uncommitted
            pending = await _pending(redis)
            assert len(pending) == 1, pending  # delivered to the worker, not acknowledged
            dead_consumer = pending[0]["consumer"]
            entry_id = pending[0]["message_id"]

            dying.send_signal(signal.SIGKILL)
            await asyncio.to_thread(dying.wait, 10)
            assert dying.returncode == -signal.SIGKILL
            await transaction.rollback()
    # The dead worker's transaction is rolled back once its server session notices the
    # closed connection: nothing of the interrupted run is visible.
    await _eventually(lambda: _backend_gone(engine, backend), 10, "the dead session to end")
    traces, pointer, values = await _state(engine, episode.id)
    assert (traces, pointer) == (1, first_last)
    assert SECOND_EMAIL not in values
    pending = await _pending(redis)
    assert [(p["message_id"], p["consumer"]) for p in pending] == [(entry_id, dead_consumer)]

    # Another worker process, which takes over a job silent for more than a second.
    survivor_env = {**env, "RELAYDESK_COMPACTION_RECLAIM_MS": str(SURVIVOR_RECLAIM_MS)}
    with _worker(survivor_env, tmp_path / "survivor.log"):
        await _eventually(lambda: _state_if(engine, episode.id, traces=2), 30, "the reclaim")
        assert await _eventually(lambda: _none_pending(redis), 5, "the reclaimed job's ack")
        await asyncio.sleep(0.5)  # time for a second, wrong application to show up
        traces, pointer, values = await _state(engine, episode.id)
    survivor_log = (tmp_path / "survivor.log").read_text()
    assert traces == 2, survivor_log  # the interrupted run left none, the reclaim one
    assert pointer == second_last
    assert values.count(SECOND_EMAIL) == 1, values
    assert len(values) == len(set(values)), values  # no fact written twice
    async with sessions() as session:
        summary = await session.scalar(
            select(EpisodeSummary).where(EpisodeSummary.episode_id == episode.id)
        )
        last_trace = await session.scalar(
            select(CompactionTrace)
            .where(CompactionTrace.episode_id == episode.id)
            .order_by(CompactionTrace.id.desc())
            .limit(1)
        )
    assert summary is not None and last_trace is not None
    assert last_trace.summary_after == summary.summary
    assert all(s["source_message_id"] <= second_last for s in summary.sentences or [])
