"""Web chat frames across gateway processes, over one Redis pub/sub channel.

With several gateway processes a visitor's websocket is held by one of them while the reply may
be produced by any other. Each process publishes the frames it delivers on `CHANNEL` (the
visitor id in the payload) and subscribes to it, broadcasting every frame to the sockets it
holds for that visitor, so a frame reaches each open socket exactly once.

Pub/sub is at-most-once: a frame published while a subscriber is reconnecting is not seen by
it. Nothing is lost for the visitor — replies are stored, and the widget fetches what it
missed with its `after` cursor when it reconnects.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from redis.asyncio import Redis

from gateway.coordination.pubsub import subscribe_forever
from gateway.runtime.tasks import TaskOwner, cancel_and_wait

log = logging.getLogger("relaydesk.webchat")

CHANNEL = "relaydesk:webchat"

Sink = Callable[[str, dict[str, Any]], Awaitable[None]]


class RedisFanout:
    """Publishes `(visitor_id, frame)` pairs and feeds the ones received to a local sink.

    `start(sink)` runs the subscriber as one tracked task, resubscribing with backoff after a
    Redis failure; `close()` cancels and awaits it.
    """

    def __init__(
        self, redis: Redis, channel: str = CHANNEL, *, owner: TaskOwner | None = None
    ) -> None:
        self._redis = redis
        self._channel = channel
        self._owner = owner if owner is not None else TaskOwner()
        self._task: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()

    async def publish(self, visitor_id: str, frame: dict[str, Any]) -> None:
        payload = json.dumps({"visitor_id": visitor_id, "frame": frame}, separators=(",", ":"))
        await self._redis.publish(self._channel, payload)

    def start(self, sink: Sink) -> None:
        self._task = self._owner.spawn(self._run(sink), name="webchat-fanout")

    async def wait_subscribed(self) -> None:
        """Return once the subscription is active (frames published from now on arrive)."""
        await self._subscribed.wait()

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])
            self._task = None

    async def _run(self, sink: Sink) -> None:
        async def handle(data: object) -> None:
            parsed = _parse(data)
            if parsed is not None:
                await sink(*parsed)

        await subscribe_forever(
            self._redis,
            self._channel,
            handle,
            subscribed=self._subscribed,
            log=log,
            what="web chat fan-out",
        )


def _parse(data: object) -> tuple[str, dict[str, Any]] | None:
    try:
        decoded = json.loads(data) if isinstance(data, str | bytes) else None
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        visitor, frame = decoded.get("visitor_id"), decoded.get("frame")
        if isinstance(visitor, str) and isinstance(frame, dict):
            return visitor, frame
    log.warning("ignored a malformed web chat fan-out payload")
    return None


FANOUT = web.AppKey("webchat_fanout", RedisFanout)
