"""Forgetting erased customers: in this process without Redis, in every process with it; and
the Redis keys and queued jobs that name them."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import Redis

from context.recall_index import build_index
from gateway.customers.forgetting import (
    Forgetting,
    delete_keys,
    delete_stream_entries,
    redis_keys,
)
from gateway.memory.recall import RecallCache


def _cache(*customer_ids: str) -> RecallCache:
    cache = RecallCache()
    for customer_id in customer_ids:
        cache.put((customer_id, None, None), "fingerprint", build_index([]))
    return cache


async def test_without_redis_the_process_cache_is_cleared_directly() -> None:
    cache = _cache("erased", "kept")
    forgetting = Forgetting(cache, None)
    forgetting.listen()
    await forgetting.announce({"erased"})
    assert not cache.holds("erased") and cache.holds("kept")
    await forgetting.close()


async def test_an_announcement_reaches_another_process(redis: Redis) -> None:
    here, there = _cache("erased"), _cache("erased", "kept")
    other_process = Redis.from_url(_url(redis))
    speaker, listener = Forgetting(here, redis), Forgetting(there, other_process)
    listener.listen()
    assert listener.subscribed is not None
    await asyncio.wait_for(listener.subscribed.wait(), 5)
    await speaker.announce({"erased"})
    assert not here.holds("erased")
    for _ in range(100):
        if not there.holds("erased"):
            break
        await asyncio.sleep(0.02)
    assert not there.holds("erased") and there.holds("kept")
    await listener.close()
    await speaker.close()
    await other_process.aclose()


def _url(redis: Redis) -> str:
    kwargs = redis.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


async def test_the_keys_and_queued_jobs_naming_a_customer_go(redis: Redis) -> None:
    stream = "relaydesk:test-forgetting"
    await redis.delete(stream, "relaydesk:seen:whatsapp:SMx", "relaydesk:lock:c1:whatsapp")
    await redis.set("relaydesk:seen:whatsapp:SMx", "1")
    await redis.set("relaydesk:lock:c1:whatsapp", "owner")
    await redis.set("relaydesk:sought:c1:whatsapp", "1", px=30_000)
    await redis.set("relaydesk:seen:whatsapp:SMother", "1")
    for customer in ("c1", "c2", "c1"):
        await redis.xadd(stream, {"customer_id": customer, "episode_id": "e", "reason": "closed"})
    keys = redis_keys([("whatsapp", "SMx")], ["c1:whatsapp"])
    assert await delete_keys(redis, keys) == 3
    assert await redis.exists("relaydesk:seen:whatsapp:SMother") == 1
    assert await delete_stream_entries(redis, stream, {"c1"}, page=1) == 2
    entries: list[Any] = list(await redis.xrange(stream) or [])
    left = [fields[b"customer_id"] for _, fields in entries]
    assert left == [b"c2"]
    await redis.delete(stream, "relaydesk:seen:whatsapp:SMother")
