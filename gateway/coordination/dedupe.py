"""The Redis fast path of inbound dedupe, in front of the database's unique constraint.

`SET NX` on `relaydesk:seen:{channel}:{id}` answers a provider's replay without storing
anything. Redis is only a shortcut: when it is down or slow the answer is `UNKNOWN`, the caller
stores the message and the unique constraint on (channel, provider message id) decides —
nothing is lost or stored twice, a replay just costs a transaction.

After a failure the fast path is skipped for `backoff_s`, so a dead or stalled server costs one
request its budget instead of every request; the first call after that probes Redis again and
one success restores the fast path. A call cut off by the budget is cancelled, and redis-py
closes a connection whose command was cancelled, so its late reply cannot reach the next
command (see tests/flows/faults/test_redis_stall.py).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import RedisError

log = logging.getLogger("relaydesk.dedupe")

SEEN_TTL_S = 7 * 24 * 3600
BUDGET_S = 0.5  # a healthy SET NX takes a millisecond; a busy event loop adds to it
BACKOFF_S = 1.0


def seen_key(channel: str, provider_message_id: str) -> str:
    return f"relaydesk:seen:{channel}:{provider_message_id}"


class Sighting(enum.Enum):
    FIRST = "first"  # not seen before: store it
    REPEAT = "repeat"  # seen before: it is probably stored already
    UNKNOWN = "unknown"  # Redis unavailable: store it, the database constraint decides


class SeenKeys:
    def __init__(
        self,
        redis: Redis,
        *,
        ttl_s: int = SEEN_TTL_S,
        budget_s: float = BUDGET_S,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        self._redis = redis
        self._ttl_s = ttl_s
        self._budget_s = budget_s
        self._backoff_s = backoff_s
        self._skip_until: float | None = None  # set while degraded

    @property
    def degraded(self) -> bool:
        """The last call failed; the database constraint alone dedupes until a probe works."""
        return self._skip_until is not None

    async def sight(self, channel: str, provider_message_id: str) -> Sighting:
        [sighting] = await self.sight_many([(channel, provider_message_id)])
        return sighting

    async def sight_many(self, keys: Sequence[tuple[str, str]]) -> list[Sighting]:
        """`sight` for several (channel, provider message id), in one round trip."""
        now = asyncio.get_running_loop().time()
        if not keys or (self._skip_until is not None and now < self._skip_until):
            return [Sighting.UNKNOWN] * len(keys)
        try:
            async with asyncio.timeout(self._budget_s):
                async with self._redis.pipeline(transaction=False) as pipe:
                    for channel, provider_message_id in keys:
                        key = seen_key(channel, provider_message_id)
                        pipe.set(key, "1", nx=True, ex=self._ttl_s)
                    firsts = await pipe.execute()
        except (RedisError, OSError, TimeoutError) as exc:
            if self._skip_until is None:
                log.warning(
                    "redis dedupe unavailable, the database constraint dedupes alone",
                    extra={"fields": {"error": type(exc).__name__}},
                )
            self._skip_until = asyncio.get_running_loop().time() + self._backoff_s
            return [Sighting.UNKNOWN] * len(keys)
        if self._skip_until is not None:
            self._skip_until = None
            log.info("redis dedupe fast path restored")
        return [Sighting.FIRST if first else Sighting.REPEAT for first in firsts]

    async def forget(self, keys: Sequence[tuple[str, str]]) -> None:
        """Remove the marks of these (channel, provider message id): an erased message's late
        retry set its mark again. A failure is only logged; the mark expires with its TTL."""
        if not keys:
            return
        try:
            async with asyncio.timeout(self._budget_s):
                await self._redis.delete(*(seen_key(channel, pid) for channel, pid in keys))
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning(
                "dedupe marks not forgotten", extra={"fields": {"error": type(exc).__name__}}
            )
