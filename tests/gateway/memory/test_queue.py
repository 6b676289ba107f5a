"""Compaction queues: in-process coalescing, and a real Redis Streams consumer group whose
dead consumer's job is reclaimed by another."""

from __future__ import annotations

import asyncio
import uuid

from redis.asyncio import Redis

from gateway.memory.queue import CompactionJob, InProcessQueue, RedisStreamQueue


async def test_in_process_queue_coalesces_a_burst_per_episode() -> None:
    queue = InProcessQueue()
    seen: list[str] = []

    async def handler(job: CompactionJob) -> None:
        seen.append(job.episode_id)

    for _ in range(5):
        await queue.enqueue(CompactionJob("c1", "e1"))
    await queue.enqueue(CompactionJob("c1", "e2"))
    worker = asyncio.create_task(queue.run(handler))
    await queue.drained()
    worker.cancel()
    assert seen == ["e1", "e2"]


async def test_a_dead_consumers_job_is_reclaimed_and_acked_once(redis: Redis) -> None:
    stream = f"relaydesk:test:{uuid.uuid4().hex}"
    dying = RedisStreamQueue(
        redis, consumer="dying", stream=stream, reclaim_after_ms=100, block_ms=50
    )
    healthy = RedisStreamQueue(
        redis, consumer="healthy", stream=stream, reclaim_after_ms=100, block_ms=50
    )
    await dying.ensure_group()
    await dying.enqueue(CompactionJob("c1", "e1"))
    started = asyncio.Event()

    async def hangs(job: CompactionJob) -> None:
        started.set()
        await asyncio.sleep(3600)

    crashed = asyncio.create_task(dying.run(hangs))
    await asyncio.wait_for(started.wait(), 5)
    crashed.cancel()  # the worker dies mid-job: the entry stays pending, unacknowledged
    assert await dying.pending() == 1

    handled: list[CompactionJob] = []

    async def works(job: CompactionJob) -> None:
        handled.append(job)

    await asyncio.sleep(0.15)
    survivor = asyncio.create_task(healthy.run(works))
    for _ in range(100):
        if handled and await healthy.pending() == 0:
            break
        await asyncio.sleep(0.05)
    survivor.cancel()
    assert handled == [CompactionJob("c1", "e1", "threshold")]
    assert await healthy.pending() == 0
    await redis.delete(stream)
