"""One Redis pub/sub subscription kept alive: resubscribed with backoff after a Redis failure.

Pub/sub is at-most-once: what is published while a subscriber is reconnecting is not seen by
it, so every use has another way to catch up (a stored cursor, a periodic sweep)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

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
