"""One Redis pub/sub subscription kept alive: resubscribed with backoff after a Redis failure.

Pub/sub is at-most-once: what is published while a subscriber is reconnecting is not seen by
it, so every use has another way to catch up (a stored cursor, a periodic sweep)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from gateway.runtime.tasks import TaskOwner, cancel_and_wait

RETRY_MIN_S = 0.5
RETRY_MAX_S = 10.0

Handler = Callable[[object], Awaitable[None]]


async def subscribe_forever(
    redis: Redis,
    channel: str,
    handle: Handler,
    *,
    subscribed: asyncio.Event,
    log: logging.Logger,
    what: str,
) -> None:
    """Feed each message's data on `channel` to `handle`, until cancelled; `subscribed` is set
    while the subscription is active."""
    delay = RETRY_MIN_S
    while True:
        try:
            async with redis.pubsub(ignore_subscribe_messages=True) as pubsub:
                await pubsub.subscribe(channel)
                subscribed.set()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        await handle(message.get("data"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if subscribed.is_set():
                delay = RETRY_MIN_S  # it had worked: start the backoff over
                subscribed.clear()
            log.warning(
                f"{what} subscription lost",
                extra={"fields": {"error": type(exc).__name__, "retry_in_s": delay}},
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, RETRY_MAX_S)


class Channel:
    """One Redis pub/sub channel as the wake-ups use it: messages published without waiting
    (a failure only logged: every use also polls or sweeps), and at most one listener task,
    resubscribed after failures (`subscribe_forever`), spawned through `owner`."""

    def __init__(
        self,
        redis: Redis,
        name: str,
        *,
        log: logging.Logger,
        what: str,
        owner: TaskOwner | None = None,
    ) -> None:
        self._redis = redis
        self._owner = owner if owner is not None else TaskOwner()
        self._name = name
        self._log = log
        self._what = what
        self._publishing: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()

    def publish(self, message: str) -> None:
        # Not awaited by the caller: a request never waits for the wake-up. Kept here, not
        # spawned through the owner: one short send per wake-up, cancelled by `close`.
        task = asyncio.create_task(self._send(message), name=self._what)
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _send(self, message: str) -> None:
        try:
            await self._redis.publish(self._name, message)
        except Exception as exc:
            self._log.warning(
                f"{self._what} not published", extra={"fields": {"error": type(exc).__name__}}
            )

    def listen(self, handle: Handler) -> None:
        """Feed each message published by any process to `handle`."""
        self._listener = self._owner.spawn(
            subscribe_forever(
                self._redis,
                self._name,
                handle,
                subscribed=self.subscribed,
                log=self._log,
                what=self._what,
            ),
            name=f"{self._what} listener",
        )

    async def close(self) -> None:
        tasks = list(self._publishing)
        if self._listener is not None:
            tasks.append(self._listener)
        await cancel_and_wait(tasks)
