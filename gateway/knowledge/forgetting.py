"""After a knowledge document is deleted or replaced: every process drops what it cached of it.

Announced on the forgetting channel the erasure uses (`gateway.customers.forgetting.CHANNEL`),
as a JSON object `{"knowledge": {"tenant": ..., "documents": [...]}}`; the erasure's listener
reads only lists and leaves it, this one reads only such objects. Pub/sub is at-most-once: a
process that misses the announcement still reads the stored chunks when its cache entry is
next checked against the database; the announcement makes a deletion take effect at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.coordination.pubsub import Channel
from gateway.customers.forgetting import CHANNEL
from gateway.runtime.tasks import TaskOwner

log = logging.getLogger("relaydesk.knowledge")

KEY: Final = "knowledge"


@dataclass(frozen=True, slots=True)
class DocumentsForgotten:
    """A tenant's documents whose cached chunks must go (deleted, or replaced by new ones)."""

    tenant: str
    document_ids: tuple[str, ...]

    def to_message(self) -> str:
        return json.dumps({KEY: {"tenant": self.tenant, "documents": list(self.document_ids)}})

    @classmethod
    def from_message(cls, data: object) -> DocumentsForgotten | None:
        """The announcement in a message of the channel; None for anything else (the
        erasure's lists of customers among them)."""
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
        try:
            decoded = json.loads(text)
        except ValueError:
            return None
        body = decoded.get(KEY) if isinstance(decoded, dict) else None
        if not isinstance(body, dict):
            return None
        tenant, documents = body.get("tenant"), body.get("documents")
        if not isinstance(tenant, str) or not isinstance(documents, list):
            return None
        return cls(tenant, tuple(str(d) for d in documents))


# What a cache of chunks does with an announcement: drop the documents it names.
Drop = Callable[[DocumentsForgotten], None]


async def publish_forgotten(redis: Redis | None, forgotten: DocumentsForgotten) -> None:
    """Tell every listening process (none without Redis). A Redis failure is logged, not
    raised: the change is already committed, and caches check what they hold."""
    if redis is None or not forgotten.document_ids:
        return
    try:
        await redis.publish(CHANNEL, forgotten.to_message())
    except (RedisError, OSError) as exc:
        log.warning(
            "knowledge forgetting not announced", extra={"fields": {"error": type(exc).__name__}}
        )


class KnowledgeForgetting:
    """Tells every process's knowledge caches to drop documents; the caches of this process
    register their `Drop` with `on_forget`."""

    def __init__(self, redis: Redis | None, *, owner: TaskOwner | None = None) -> None:
        self._redis = redis
        self._drops: list[Drop] = []
        self._channel = (
            Channel(redis, CHANNEL, log=log, what="knowledge forgetting", owner=owner)
            if redis is not None
            else None
        )
        self.subscribed = self._channel.subscribed if self._channel is not None else None

    def on_forget(self, drop: Drop) -> None:
        self._drops.append(drop)

    def _drop(self, forgotten: DocumentsForgotten) -> None:
        for drop in self._drops:
            drop(forgotten)

    def listen(self) -> None:
        """Drop what any process announces (a no-op without Redis)."""
        if self._channel is None:
            return

        async def handle(data: object) -> None:
            forgotten = DocumentsForgotten.from_message(data)
            if forgotten is not None:
                self._drop(forgotten)

        self._channel.listen(handle)

    async def announce(self, forgotten: DocumentsForgotten) -> None:
        """Drop the documents here at once, and (with Redis) in every other process."""
        self._drop(forgotten)
        await publish_forgotten(self._redis, forgotten)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
