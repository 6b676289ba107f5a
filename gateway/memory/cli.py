"""`relaydesk worker` and `relaydesk compaction rebuild`."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from gateway.config import Settings
from gateway.coordination.redis_client import compaction_queue, make_redis
from gateway.memory.llm_compactor import CompactorFactory, llm_compactor_factory
from gateway.memory.queue import CompactionQueue, InProcessQueue
from gateway.memory.rebuild import rebuild_customer
from gateway.memory.worker import MemoryWorker
from gateway.runtime.heartbeat import beating, heartbeat_path
from gateway.storage.engine import engine_for, make_sessionmaker


@contextlib.asynccontextmanager
async def _worker(
    settings: Settings, queue: CompactionQueue
) -> AsyncIterator[tuple[MemoryWorker, async_sessionmaker[AsyncSession]]]:
    """A worker that compacts like the gateway does: each tenant's `summary_model` when one
    is configured, the offline compactor otherwise."""
    key = settings.model_api_key
    async with (
        _sessions(settings) as sessions,
        httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0)) as http,
    ):
        compactor_for: CompactorFactory = llm_compactor_factory(
            http,
            base_url=settings.model_base_url,
            api_key=key.get_secret_value() if key is not None else None,
        )
        counter = TiktokenCounter(load_encoding())
        yield MemoryWorker(sessions, counter, queue, compactor_for), sessions


@contextlib.asynccontextmanager
async def _sessions(settings: Settings) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = engine_for(settings)
    try:
        yield make_sessionmaker(engine)
    finally:
        await engine.dispose()


async def run_worker(settings: Settings, count: int) -> int:
    if settings.redis_url is None:
        print(
            "relaydesk worker: RELAYDESK_REDIS_URL is not set — without Redis the gateway "
            "compacts in-process and no separate worker is needed",
            file=sys.stderr,
        )
        return 2
    redis = make_redis(settings.redis_url)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for name in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(name, stop.set)
    try:
        async with _worker(settings, compaction_queue(redis, settings)) as (worker, _):
            worker.start(count)
            print(f"relaydesk worker: {count} compaction consumer(s) running", flush=True)
            async with beating(heartbeat_path(settings.heartbeat_dir, "worker")):
                await stop.wait()
            await worker.close()
    finally:
        await redis.aclose()
    return 0


async def rebuild(settings: Settings, customer_id: str) -> int:
    async with _worker(settings, InProcessQueue()) as (worker, sessions):
        report = await rebuild_customer(sessions, worker, customer_id)
    print(
        f"rebuilt memory of customer {customer_id}: {report.episodes} episodes, "
        f"{report.messages_compacted} messages compacted, {report.facts_written} facts"
    )
    return 0
