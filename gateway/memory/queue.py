"""The compaction job queue: in-process by default, a Redis Streams consumer group in
production (several workers on several machines).

Delivery is at-least-once; jobs are idempotent (a job re-plans from the stored state, and the
summary pointer advances in the same transaction as the summary and facts it covers). A job
whose worker died stays pending in the stream and is reclaimed with XAUTOCLAIM after
`reclaim_after_ms`.

Redis being down must not fail the request that stored a message: a job Redis refuses is kept
in this process (one per episode) and added by the next enqueue or consumer round that reaches
Redis; the consumer waits an outage out with backoff and creates its group again if Redis lost
it. Jobs kept here die with the process; the next threshold crossing re-plans the episode, but a
lost `closed` job leaves that episode without its final summary until a rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

log = logging.getLogger("relaydesk.memory.queue")

STREAM = "relaydesk:compaction"
GROUP = "compactors"
ENQUEUE_BUDGET_S = 1.0  # a stalled Redis must not hold up the webhook that stored the message
MAX_DEFERRED = 10_000  # jobs kept while Redis is unavailable (memory bound)
RETRY_MIN_S = 0.5
RETRY_MAX_S = 10.0


@dataclass(frozen=True, slots=True)
class CompactionJob:
    customer_id: str
    episode_id: str
    reason: str = "threshold"  # threshold | closed | rebuild


Handler = Callable[[CompactionJob], Awaitable[None]]


async def _run_job(handler: Handler, job: CompactionJob) -> bool:
    """Whether ``handler`` finished ``job``; a failure is logged, not raised (cancellation is)."""
    try:
        await handler(job)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("compaction failed", extra={"fields": {"episode": job.episode_id}})
        return False
    return True


class CompactionQueue(Protocol):
    async def enqueue(self, job: CompactionJob) -> None:
        """Queue the job; never raises because the queue is unavailable."""
        ...

    async def run(self, handler: Handler) -> None:
        """Consume jobs until cancelled."""
        ...


class InProcessQueue:
    """An asyncio queue with one coalescing slot per episode (a burst enqueues once)."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[CompactionJob] = asyncio.Queue()
        self._queued: set[str] = set()
        self._busy = 0

    async def enqueue(self, job: CompactionJob) -> None:
        if job.episode_id in self._queued:
            return
        self._queued.add(job.episode_id)
        await self._queue.put(job)

    async def run(self, handler: Handler) -> None:
        while True:
            job = await self._queue.get()
            self._queued.discard(job.episode_id)
            self._busy += 1
            try:
                await _run_job(handler, job)
            finally:
                self._busy -= 1
                self._queue.task_done()

    async def drained(self) -> None:
        """Wait until every queued job has been handled (tests, demo, eval)."""
        await self._queue.join()


class RedisStreamQueue:
    def __init__(
        self,
        redis: Redis,
        *,
        consumer: str | None = None,
        stream: str = STREAM,
        group: str = GROUP,
        reclaim_after_ms: int = 60_000,
        block_ms: int = 2_000,
    ) -> None:
        self._redis = redis
        self._stream = stream
        self._group = group
        self._consumer = consumer or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self._reclaim_after_ms = reclaim_after_ms
        self._block_ms = block_ms
        self._deferred: dict[str, CompactionJob] = {}  # refused by Redis, by episode

    @property
    def deferred(self) -> int:
        """Jobs kept in this process until Redis takes them."""
        return len(self._deferred)

    async def ensure_group(self) -> None:
        with contextlib.suppress(ResponseError):  # BUSYGROUP: it exists already
            await self._redis.xgroup_create(self._stream, self._group, id="0", mkstream=True)

    async def enqueue(self, job: CompactionJob) -> None:
        try:
            async with asyncio.timeout(ENQUEUE_BUDGET_S):
                await self.flush()
                await self._add(job)
        except (RedisError, OSError, TimeoutError) as exc:
            self._defer(job, exc)

    async def flush(self) -> int:
        """Add the jobs kept while Redis was unavailable; returns how many were added."""
        added = 0
        while self._deferred:
            episode_id, job = next(iter(self._deferred.items()))
            await self._add(job)  # a failure leaves this one and the rest kept
            self._deferred.pop(episode_id, None)
            added += 1
        if added:
            log.info("kept compaction jobs queued", extra={"fields": {"jobs": added}})
        return added

    async def _add(self, job: CompactionJob) -> None:
        await self._redis.xadd(
            self._stream,
            {"customer_id": job.customer_id, "episode_id": job.episode_id, "reason": job.reason},
            maxlen=100_000,
            approximate=True,
        )

    def _defer(self, job: CompactionJob, error: BaseException) -> None:
        fields = {"episode": job.episode_id, "error": type(error).__name__}
        if job.episode_id not in self._deferred and len(self._deferred) >= MAX_DEFERRED:
            log.error("compaction job dropped, too many kept", extra={"fields": fields})
            return
        if not self._deferred:
            log.warning("compaction queue unavailable, keeping jobs", extra={"fields": fields})
        # Any job on a closed episode compacts it to the end, so the first one kept suffices.
        self._deferred.setdefault(job.episode_id, job)

    async def run(self, handler: Handler) -> None:
        """Consume until cancelled, waiting out Redis outages with backoff."""
        delay = RETRY_MIN_S
        while True:
            try:
                await self.ensure_group()  # again after an outage: Redis may have lost it
                delay = RETRY_MIN_S  # Redis answered: a later outage starts the backoff over
                await self._consume(handler)
            except (RedisError, OSError) as exc:  # NOGROUP (a ResponseError) included
                log.warning(
                    "compaction queue unavailable",
                    extra={"fields": {"error": type(exc).__name__, "retry_in_s": delay}},
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    async def _consume(self, handler: Handler) -> None:
        while True:
            await self.flush()
            handled = await self.reclaim(handler)
            # [[stream, [(entry id, fields), ...]]]
            entries: list[Any] = cast(
                list[Any],
                await self._redis.xreadgroup(
                    self._group, self._consumer, {self._stream: ">"}, count=10, block=self._block_ms
                ),
            )
            for _, messages in entries or ():
                for entry_id, fields in messages:
                    await self._handle(entry_id, fields, handler)
                    handled += 1
            if not handled:
                await asyncio.sleep(0)

    async def reclaim(self, handler: Handler) -> int:
        """Take over jobs another consumer left pending for too long (it died mid-job)."""
        result = await self._redis.xautoclaim(
            self._stream, self._group, self._consumer, self._reclaim_after_ms, "0-0", count=10
        )
        claimed = result[1] if result else []
        for entry_id, fields in claimed:
            if fields:  # deleted entries come back empty
                await self._handle(entry_id, fields, handler)
        return len(claimed)

    async def _handle(self, entry_id: bytes | str, fields: dict, handler: Handler) -> None:  # type: ignore[type-arg]
        def text(key: str) -> str:
            value = fields.get(key.encode(), fields.get(key, b""))
            return value.decode() if isinstance(value, bytes) else str(value)

        job = CompactionJob(text("customer_id"), text("episode_id"), text("reason") or "threshold")
        # A failed job is left pending: another consumer (or this one) reclaims it later.
        if await _run_job(handler, job):
            await self._redis.xack(self._stream, self._group, entry_id)

    async def pending(self) -> int:
        info = await self._redis.xpending(self._stream, self._group)
        return int(info["pending"]) if info else 0
