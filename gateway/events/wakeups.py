"""Waking the event senders of other processes over Redis pub/sub.

A process that records events but sends none (a gateway process under `serve --workers N`)
publishes after each commit; the sending processes subscribe and look at once. A wake-up lost
while Redis is away costs only delay: every sender polls the table each second anyway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from redis.asyncio import Redis

from gateway.coordination.pubsub import subscribe_forever
from gateway.runtime.tasks import cancel_and_wait

log = logging.getLogger("relaydesk.events")

CHANNEL = "relaydesk:events"


class EventWakeups:
    def __init__(self, redis: Redis, channel: str = CHANNEL) -> None:
        self._redis = redis
        self._channel = channel
        self._publishing: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    def publish(self) -> None:
        """Events were committed here: wake the senders (not awaited: the commit's request
        does not wait for Redis)."""
        task = asyncio.create_task(self._send(), name="event-wakeup")
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _send(self) -> None:
        try:
            await self._redis.publish(self._channel, "events")
        except Exception as exc:  # the senders' poll finds the events
            log.warning(
                "event wake-up not published", extra={"fields": {"error": type(exc).__name__}}
            )

    def listen(self, wake: Callable[[], None]) -> None:
        """Call `wake()` for each wake-up published by any process."""

        async def handle(data: object) -> None:
            wake()

        self._listener = asyncio.create_task(
            subscribe_forever(
                self._redis,
                self._channel,
                handle,
                subscribed=self.subscribed,
                log=log,
                what="event wake-up",
            ),
            name="event-wakeups",
        )

    async def close(self) -> None:
        tasks = list(self._publishing)
        if self._listener is not None:
            tasks.append(self._listener)
        await cancel_and_wait(tasks)
