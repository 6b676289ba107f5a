"""Conversation locks: in-process exclusion, and Redis locks whose stale holders are fenced
off by the database (real Redis, real SQLite/PostgreSQL)."""

from __future__ import annotations

import asyncio
import uuid

from redis.asyncio import Redis
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.coordination.locks import FENCE_TTL_MS, InProcessLocks, RedisLocks
from gateway.storage.repositories import turns


async def test_in_process_lock_serializes_one_conversation_only() -> None:
    locks = InProcessLocks()
    events: list[str] = []

    async def turn(key: str, name: str) -> None:
        async with locks.hold(key) as held:
            assert held.fence is None
            events.append(f"start {name}")
            await asyncio.sleep(0.05)
            events.append(f"end {name}")

    await asyncio.gather(turn("a", "a1"), turn("a", "a2"), turn("b", "b1"))
    a_events = [e for e in events if " a" in e]
    assert a_events in (
        ["start a1", "end a1", "start a2", "end a2"],
        ["start a2", "end a2", "start a1", "end a1"],
    )
    assert events.index("start b1") < events.index("end a1") or events.index(
        "start b1"
    ) < events.index("end a2")


async def test_redis_lock_excludes_and_fences_increase(redis: Redis) -> None:
    locks = RedisLocks(redis, ttl_ms=5_000)
    key = f"conv-{uuid.uuid4().hex}"
    inside = 0
    peak = 0
    fences: list[int] = []

    async def turn() -> None:
        nonlocal inside, peak
        async with locks.hold(key) as held:
            assert held.fence is not None
            fences.append(held.fence)
            inside += 1
            peak = max(peak, inside)
            await asyncio.sleep(0.02)
            inside -= 1

    await asyncio.gather(*(turn() for _ in range(8)))
    assert peak == 1
    assert fences == sorted(fences) and len(set(fences)) == 8


async def test_fence_counter_never_goes_below_the_database_floor(redis: Redis) -> None:
    locks = RedisLocks(redis)
    key = f"conv-{uuid.uuid4().hex}"
    async with locks.hold(key, floor=41) as held:
        assert held.fence == 42


async def test_a_stale_holder_cannot_write(redis: Redis, session: AsyncSession) -> None:
    # The first holder's lock expires mid-turn (no renewal); a second holder takes it and
    # writes; the first one's late write is refused by the fence.
    locks = RedisLocks(redis, ttl_ms=150, renew=False)
    key = f"conv-{uuid.uuid4().hex}"
    stale_entered = asyncio.Event()
    fresh_done = asyncio.Event()
    outcome: dict[str, bool] = {}

    async def stale() -> None:
        async with locks.hold(key) as held:
            stale_entered.set()
            await fresh_done.wait()
            assert held.fence is not None
            outcome["stale"] = await turns.claim_fence(session, key, held.fence)

    async def fresh() -> None:
        await stale_entered.wait()
        async with locks.hold(key) as held:  # waits until the stale lock expires
            assert held.fence is not None
            outcome["fresh"] = await turns.claim_fence(session, key, held.fence)
        fresh_done.set()

    await asyncio.wait_for(asyncio.gather(stale(), fresh()), 10)
    assert outcome == {"fresh": True, "stale": False}
    assert await turns.current_fence(session, key) > 0


async def test_in_process_try_hold_gives_way_to_the_holder() -> None:
    locks = InProcessLocks()
    async with locks.hold("a"):
        async with locks.try_hold("a") as other:
            assert other is None
        async with locks.try_hold("b") as elsewhere:
            assert elsewhere is not None
    async with locks.try_hold("a") as free:
        assert free is not None and free.fence is None


async def test_redis_try_hold_gives_way_to_another_holder_and_fences_the_next(
    redis: Redis,
) -> None:
    first, second = RedisLocks(redis, ttl_ms=5_000), RedisLocks(redis, ttl_ms=5_000)
    key = f"conv-{uuid.uuid4().hex}"
    async with first.try_hold(key) as held:
        assert held is not None and held.fence is not None
        async with second.try_hold(key) as refused:
            assert refused is None  # at once: no waiting for the holder
        fence = held.fence
    async with second.try_hold(key) as later:
        assert later is not None and later.fence is not None and later.fence > fence
    await redis.delete(f"relaydesk:fence:{key}")


class _SwallowsACancel(Redis):
    """A client whose renewal, cancelled while it waits for Redis, ends in a TimeoutError
    instead of the cancellation."""

    renewals_cut = 0
    renewing: asyncio.Event | None = None

    async def evalsha(self, sha: str, numkeys: int, *keys_and_args: object) -> object:  # type: ignore[override]
        # The renewal: one key (the lock), two arguments (owner, time to live).
        renewal = numkeys == 1 and len(keys_and_args) == 3
        if renewal and self.renewals_cut == 0:
            if self.renewing is not None:
                self.renewing.set()
            try:
                await asyncio.sleep(0.02)  # waiting for Redis's reply
            except asyncio.CancelledError:
                self.renewals_cut += 1
                raise RedisTimeoutError("Timeout reading from 127.0.0.1:6379") from None
        return await super().evalsha(sha, numkeys, *keys_and_args)  # type: ignore[arg-type]


async def test_a_renewal_that_swallows_its_cancellation_never_keeps_the_lock(
    redis: Redis,
) -> None:
    # Seen under load: the holder waited for good for its renewal task, which lived on and
    # renewed the lock every few seconds; the conversation was never answered again.
    client = _SwallowsACancel(connection_pool=redis.connection_pool)
    client.renewing = asyncio.Event()
    locks = RedisLocks(client, ttl_ms=600)  # renewed every 0.2 s
    key = f"conv-{uuid.uuid4().hex}"
    async with asyncio.timeout(5):
        async with locks.try_hold(key) as held:
            assert held is not None
            await client.renewing.wait()  # the renewal is waiting for Redis now
    assert client.renewals_cut == 1
    assert await redis.get(f"relaydesk:lock:{key}") is None  # let go at once, not expired
    async with locks.try_hold(key) as again:
        assert again is not None
    await redis.delete(f"relaydesk:fence:{key}")


class _CountsCalls(Redis):
    """A client that counts the scripts it runs (each one round trip)."""

    calls = 0

    async def evalsha(self, sha: str, numkeys: int, *keys_and_args: object) -> object:  # type: ignore[override]
        self.calls += 1
        return await super().evalsha(sha, numkeys, *keys_and_args)  # type: ignore[arg-type]

    async def eval(self, script: str, numkeys: int, *keys_and_args: object) -> object:  # type: ignore[override]
        self.calls += 1
        return await super().eval(script, numkeys, *keys_and_args)  # type: ignore[arg-type]


async def test_the_lock_and_its_fence_are_taken_in_one_round_trip(redis: Redis) -> None:
    client = _CountsCalls(connection_pool=redis.connection_pool)
    locks = RedisLocks(client, ttl_ms=5_000, renew=False)
    warm = f"conv-{uuid.uuid4().hex}"
    async with locks.try_hold(warm):
        pass  # a Redis that never ran the scripts is sent their bodies first
    await redis.delete(f"relaydesk:fence:{warm}")
    client.calls = 0
    key = f"conv-{uuid.uuid4().hex}"
    async with locks.try_hold(key, floor=7) as held:
        assert held is not None and held.fence == 8  # raised to the floor, then the next one
        assert client.calls == 1
        # A quiet conversation's counter does not stay in Redis for good.
        assert 0 < await redis.pttl(f"relaydesk:fence:{key}") <= FENCE_TTL_MS
        async with locks.try_hold(key) as refused:
            assert refused is None
        assert client.calls == 2
    assert client.calls == 3  # the release
    assert await redis.get(f"relaydesk:lock:{key}") is None
    await redis.delete(f"relaydesk:fence:{key}")


async def test_the_holder_learns_at_its_release_whether_the_lock_was_sought(redis: Redis) -> None:
    first, second = RedisLocks(redis, ttl_ms=5_000), RedisLocks(redis, ttl_ms=5_000)
    key = f"conv-{uuid.uuid4().hex}"
    try:
        async with first.try_hold(key) as quiet:
            assert quiet is not None
        assert not quiet.sought.meanwhile  # nobody looked for it
        async with first.try_hold(key) as sought:
            assert sought is not None
            async with second.try_hold(key) as refused:
                assert refused is None  # another drain finds it held and leaves its turn
        assert sought.sought.meanwhile
        async with second.try_hold(key) as next_one:
            assert next_one is not None
        assert not next_one.sought.meanwhile  # the earlier holder's release took the note
    finally:
        await redis.delete(f"relaydesk:fence:{key}", f"relaydesk:sought:{key}")


async def test_an_in_process_lock_never_says_it_was_not_sought() -> None:
    async with InProcessLocks().try_hold("conv-1") as held:
        assert held is not None
    assert held.sought.meanwhile  # unknown: the drain looks again, as it always did
