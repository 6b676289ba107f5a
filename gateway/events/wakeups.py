"""Waking the event senders of other processes over Redis pub/sub.

A process that records events but sends none (a gateway process under `serve --workers N`)
publishes after each commit; the sending processes subscribe and look at once. A wake-up lost
while Redis is away costs only delay: every sender polls the table each second anyway.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from redis.asyncio import Redis

from gateway.coordination.pubsub import Channel
from gateway.runtime.tasks import TaskOwner

log = logging.getLogger("relaydesk.events")

CHANNEL = "relaydesk:events"


class EventWakeups:
    def __init__(
        self, redis: Redis, channel: str = CHANNEL, *, owner: TaskOwner | None = None
    ) -> None:
        self._channel = Channel(redis, channel, log=log, what="event wake-up", owner=owner)
        self.subscribed = self._channel.subscribed

    def publish(self) -> None:
        """Events were committed here: wake the senders (not awaited: the commit's request
        does not wait for Redis)."""
        self._channel.publish("events")

    def listen(self, wake: Callable[[], None]) -> None:
        """Call `wake()` for each wake-up published by any process."""

        async def handle(data: object) -> None:
            wake()

        self._channel.listen(handle)

    async def close(self) -> None:
        await self._channel.close()
