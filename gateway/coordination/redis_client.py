"""The one way a Relaydesk process builds its Redis client (gateway and worker alike)."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.config import Settings
from gateway.memory.queue import GROUP, RedisStreamQueue


def make_redis(url: str) -> Redis:
    # Connecting fails fast, so with Redis unreachable the callers' fallbacks (dedupe by the
    # database, jobs kept, turns left to the sweep) start at once; reads may block longer (the
    # stream consumer waits up to 2 s in XREADGROUP). A dropped connection is retried once at
    # once: after a Redis restart a pooled connection can still be the old server's. Timeouts
    # are not retried, a stalled server would only be waited on twice.
    return Redis.from_url(
        url,
        socket_timeout=5,
        socket_connect_timeout=1,
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )


def compaction_queue(redis: Redis, settings: Settings) -> RedisStreamQueue:
    return RedisStreamQueue(
        redis,
        stream=settings.compaction_stream,
        group=GROUP,
        reclaim_after_ms=settings.compaction_reclaim_ms,
    )
