"""Event wake-ups over a real Redis: a publish in one process wakes a listener in another."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis

from gateway.events.wakeups import EventWakeups


async def test_a_published_wake_up_reaches_every_listener(redis: Redis) -> None:
    channel = "relaydesk:events:test"
    publisher = EventWakeups(redis, channel)
    listeners = [EventWakeups(redis, channel), EventWakeups(redis, channel)]
    woken = [asyncio.Event(), asyncio.Event()]
    try:
        for listener, event in zip(listeners, woken, strict=True):
            listener.listen(event.set)
        async with asyncio.timeout(10):
            for listener in listeners:
                await listener.subscribed.wait()
            assert not any(event.is_set() for event in woken)
            publisher.publish()
            for event in woken:
                await event.wait()
    finally:
        for wakeups in [publisher, *listeners]:
            await wakeups.close()
