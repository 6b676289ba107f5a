"""Waking the background process from the gateway processes, over one Redis pub/sub channel.

Under `relaydesk serve --workers N` the N gateway processes only acknowledge: they commit
webhooks to the inbox and store web chat messages, then publish a wake-up — `inbox` (rows to
store) or `turn:<conversation key>` (a turn to answer). The background process, at a lower CPU
priority, subscribes and kicks its inbox processor or its scheduler. A wake-up lost while Redis
is away costs only delay: the background process's periodic sweep finds the rows and turns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from redis.asyncio import Redis

from gateway.coordination.pubsub import subscribe_forever
from gateway.runtime.tasks import cancel_and_wait

log = logging.getLogger("relaydesk.wakeups")

CHANNEL = "relaydesk:wakeups"
INBOX = "inbox"
TURN_PREFIX = "turn:"


class Wakeups:
    def __init__(self, redis: Redis, channel: str = CHANNEL) -> None:
        self._redis = redis
        self._channel = channel
        self._publishing: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    def inbox(self) -> None:
        """Rows were committed to the inbox."""
        self._publish(INBOX)

    def turn(self, conversation_key: str) -> None:
        """A turn of this conversation is pending."""
        self._publish(TURN_PREFIX + conversation_key)

    def _publish(self, message: str) -> None:
        # Not awaited by the request: the acknowledgement never waits for the wake-up.
        task = asyncio.create_task(self._send(message), name="wakeup")
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _send(self, message: str) -> None:
        try:
            await self._redis.publish(self._channel, message)
        except Exception as exc:  # the sweep finds the work later
            log.warning("wake-up not published", extra={"fields": {"error": type(exc).__name__}})

    def listen(self, *, inbox: Callable[[], None], turn: Callable[[str], None]) -> None:
        """Call `inbox()` or `turn(key)` for each wake-up published by any process."""

        async def handle(data: object) -> None:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            if text == INBOX:
                inbox()
            elif text.startswith(TURN_PREFIX) and len(text) > len(TURN_PREFIX):
                turn(text[len(TURN_PREFIX) :])

        self._listener = asyncio.create_task(
            subscribe_forever(
                self._redis,
                self._channel,
                handle,
                subscribed=self.subscribed,
                log=log,
                what="background wake-up",
            ),
            name="wakeups",
        )

    async def close(self) -> None:
        tasks = list(self._publishing)
        if self._listener is not None:
            tasks.append(self._listener)
        await cancel_and_wait(tasks)
