"""Waking the background process from the gateway processes, over one Redis pub/sub channel.

Under `relaydesk serve --workers N` the N gateway processes only acknowledge: they commit
webhooks to the inbox and store web chat messages, then publish a wake-up — `inbox` (rows to
store) or `turn:<conversation key>` (a turn to answer). The background process, at a lower CPU
priority, subscribes and kicks its inbox processor or its scheduler. A wake-up lost while Redis
is away costs only delay: the background process's periodic sweep finds the rows and turns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from redis.asyncio import Redis

from gateway.coordination.pubsub import Channel
from gateway.runtime.tasks import TaskOwner

log = logging.getLogger("relaydesk.wakeups")

CHANNEL = "relaydesk:wakeups"
INBOX = "inbox"
TURN_PREFIX = "turn:"


class Wakeups:
    def __init__(
        self, redis: Redis, channel: str = CHANNEL, *, owner: TaskOwner | None = None
    ) -> None:
        self._channel = Channel(redis, channel, log=log, what="background wake-up", owner=owner)
        self.subscribed = self._channel.subscribed

    def inbox(self) -> None:
        """Rows were committed to the inbox."""
        self._channel.publish(INBOX)

    def turn(self, conversation_key: str) -> None:
        """A turn of this conversation is pending."""
        self._channel.publish(TURN_PREFIX + conversation_key)

    def listen(self, *, inbox: Callable[[], None], turn: Callable[[str], None]) -> None:
        """Call `inbox()` or `turn(key)` for each wake-up published by any process."""

        async def handle(data: object) -> None:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            if text == INBOX:
                inbox()
            elif text.startswith(TURN_PREFIX) and len(text) > len(TURN_PREFIX):
                turn(text[len(TURN_PREFIX) :])

        self._channel.listen(handle)

    async def close(self) -> None:
        await self._channel.close()
