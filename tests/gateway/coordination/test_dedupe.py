"""The Redis fast path of inbound dedupe, for a lot of messages at once: one round trip marks
them all and tells which were seen before; with Redis gone, every one is unknown (the database
constraint decides)."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis

from gateway.coordination.dedupe import SeenKeys, Sighting


async def test_a_lot_is_marked_in_one_round_trip_and_repeats_are_told(redis: Redis) -> None:
    seen = SeenKeys(redis)
    run = uuid.uuid4().hex
    first = await seen.sight("whatsapp", f"SM{run}a")
    assert first is Sighting.FIRST
    lot = [("whatsapp", f"SM{run}a"), ("whatsapp", f"SM{run}b"), ("telegram", f"{run}:1")]
    assert await seen.sight_many(lot) == [Sighting.REPEAT, Sighting.FIRST, Sighting.FIRST]
    assert await seen.sight_many(lot) == [Sighting.REPEAT] * 3
    assert await seen.sight_many([]) == []
    assert 0 < await redis.ttl(f"relaydesk:seen:telegram:{run}:1") <= 7 * 24 * 3600


async def test_without_redis_every_message_of_the_lot_is_unknown() -> None:
    gone = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    seen = SeenKeys(gone, budget_s=0.5)
    try:
        lot = [("whatsapp", "SMx"), ("whatsapp", "SMy")]
        assert await seen.sight_many(lot) == [Sighting.UNKNOWN, Sighting.UNKNOWN]
        assert seen.degraded
    finally:
        await gone.aclose()
