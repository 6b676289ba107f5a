"""After an erasure commits: the Redis keys that name the erased data go, and every process
forgets the customers' recall entries.

The keys are built from what the erasure read before deleting (`CustomerKeys`): the dedupe
keys `relaydesk:seen:{channel}:{provider message id}`, the conversation locks and fencing
counters `relaydesk:lock:{key}` / `relaydesk:fence:{key}` and the lock's note of being sought
`relaydesk:sought:{key}`. The forgetting is announced on one
pub/sub channel that every gateway process listens to (`Forgetting.listen`); without Redis the
one process's cache is cleared directly. Pub/sub is at-most-once: a process that misses the
announcement (reconnecting) still never serves the erased customer, because its recall reads
the customer's episodes first and finds none — the announcement frees the memory at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Sequence
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.coordination.pubsub import Channel
from gateway.memory.recall import RecallCache
from gateway.runtime.tasks import TaskOwner

log = logging.getLogger("relaydesk.erasure")

CHANNEL: Final = "relaydesk:forget"
PREFIX: Final = "relaydesk"


def redis_keys(
    provider_messages: Sequence[tuple[str, str]], conversation_keys: Sequence[str] = ()
) -> list[str]:
    """The Redis keys holding these messages' dedupe marks and these conversations' locks."""
    keys = [f"{PREFIX}:seen:{channel}:{provider_id}" for channel, provider_id in provider_messages]
    for conversation in conversation_keys:
        keys += [f"{PREFIX}:{kind}:{conversation}" for kind in ("lock", "fence", "sought")]
    return keys


async def delete_keys(redis: Redis, keys: Sequence[str], *, chunk: int = 500) -> int:
    """Delete the keys; how many existed. A Redis failure is logged, not raised: the database
    is already erased and the keys expire (dedupe marks after a week)."""
    deleted = 0
    try:
        for start in range(0, len(keys), chunk):
            deleted += int(await redis.delete(*keys[start : start + chunk]))
    except (RedisError, OSError) as exc:
        log.warning(
            "erased customer's redis keys not deleted",
            extra={"fields": {"error": type(exc).__name__}},
        )
    return deleted


async def delete_stream_entries(
    redis: Redis, stream: str, customer_ids: Collection[str], *, page: int = 1000
) -> int:
    """Delete the entries of `stream` (the compaction jobs) that name one of the customers;
    how many went. Read page by page: the stream is capped, an erasure is rare."""
    wanted = set(customer_ids)
    deleted = 0
    start = "-"
    try:
        while True:
            entries: list[Any] = list(
                await redis.xrange(stream, min=start, max="+", count=page) or []
            )
            doomed = [entry_id for entry_id, fields in entries if _names(fields, wanted)]
            if doomed:
                deleted += int(await redis.xdel(stream, *doomed))
            if len(entries) < page:
                return deleted
            start = "(" + _text(entries[-1][0])
    except (RedisError, OSError) as exc:
        log.warning(
            "erased customer's queued jobs not deleted",
            extra={"fields": {"error": type(exc).__name__}},
        )
    return deleted


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _names(fields: object, customer_ids: set[str]) -> bool:
    if not isinstance(fields, dict):
        return False
    value = fields.get(b"customer_id", fields.get("customer_id"))
    return value is not None and _text(value) in customer_ids


class Forgetting:
    """Tells every process to drop customers from its recall cache."""

    def __init__(
        self, cache: RecallCache, redis: Redis | None, *, owner: TaskOwner | None = None
    ) -> None:
        self._cache = cache
        self._redis = redis
        self._channel = (
            Channel(redis, CHANNEL, log=log, what="recall forgetting", owner=owner)
            if redis is not None
            else None
        )
        self.subscribed = self._channel.subscribed if self._channel is not None else None

    def listen(self) -> None:
        """Forget what any process announces (a no-op without Redis)."""
        if self._channel is None:
            return

        async def handle(data: object) -> None:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            try:
                ids = json.loads(text)
            except ValueError:
                return
            if isinstance(ids, list):
                self._cache.forget({str(i) for i in ids})

        self._channel.listen(handle)

    async def announce(self, customer_ids: Collection[str]) -> None:
        """Forget the customers here at once, and (with Redis) in every other process."""
        ids = sorted(customer_ids)
        self._cache.forget(set(ids))
        if self._redis is None or not ids:
            return
        try:
            await self._redis.publish(CHANNEL, json.dumps(ids))
        except (RedisError, OSError) as exc:
            log.warning(
                "recall forgetting not announced", extra={"fields": {"error": type(exc).__name__}}
            )

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
