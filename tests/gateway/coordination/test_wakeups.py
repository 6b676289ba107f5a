"""Inbox wake-ups go to one idle background process, not to every one; turn wake-ups to all."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from gateway.coordination.wakeups import INBOX, PENDING_INBOX, Wakeups


@pytest.fixture
async def channel(redis: Redis) -> AsyncIterator[str]:
    name = f"relaydesk:test-wakeups:{uuid.uuid4().hex}"
    yield name
    await redis.delete(f"{name}:inbox")


class Listener:
    """A background process's side: its inbox kicks and turns, and whether it is busy."""

    def __init__(self, redis: Redis, channel: str) -> None:
        self.wakeups = Wakeups(redis, channel)
        self.kicks = 0
        self.turns: list[str] = []
        self.free = asyncio.Event()
        self.free.set()

    def kick(self) -> None:
        self.kicks += 1

    async def start(self) -> None:
        self.wakeups.listen(inbox=self.kick, turn=self.turns.append, inbox_idle=self.free.wait)
        async with asyncio.timeout(5):
            await self.wakeups.subscribed.wait()


async def _settled(listeners: list[Listener], kicks: int) -> None:
    async with asyncio.timeout(5):
        while sum(listener.kicks for listener in listeners) < kicks:
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # nothing more comes


async def test_an_inbox_wakeup_reaches_one_process_and_a_turn_every_one(
    redis: Redis, channel: str
) -> None:
    gateway = Wakeups(redis, channel)
    listeners = [Listener(redis, channel), Listener(redis, channel)]
    try:
        for listener in listeners:
            await listener.start()
        gateway.inbox()
        await _settled(listeners, 1)
        assert sorted(listener.kicks for listener in listeners) == [0, 1]
        gateway.turn("customer-1:whatsapp")
        async with asyncio.timeout(5):
            while not all(listener.turns for listener in listeners):
                await asyncio.sleep(0.02)
        assert [listener.turns for listener in listeners] == [["customer-1:whatsapp"]] * 2
    finally:
        await gateway.close()
        for listener in listeners:
            await listener.wakeups.close()


async def test_a_busy_process_leaves_the_wakeup_to_an_idle_one(redis: Redis, channel: str) -> None:
    gateway = Wakeups(redis, channel)
    busy, idle = Listener(redis, channel), Listener(redis, channel)
    busy.free.clear()
    try:
        await busy.start()
        await idle.start()
        for _ in range(3):
            gateway.inbox()
            await _settled([busy, idle], idle.kicks + 1)
        assert (busy.kicks, idle.kicks) == (0, 3)
    finally:
        await gateway.close()
        await busy.wakeups.close()
        await idle.wakeups.close()


async def test_wakeups_wait_for_a_process_and_are_kept_few(redis: Redis, channel: str) -> None:
    """Sent while every background process is busy (or none runs), at most `PENDING_INBOX` are
    kept: one claim takes every claimable row."""
    gateway = Wakeups(redis, channel)
    try:
        for _ in range(10):
            gateway.inbox()
        async with asyncio.timeout(5):
            while await redis.llen(f"{channel}:inbox") < PENDING_INBOX:
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        assert await redis.lrange(f"{channel}:inbox", 0, -1) == [INBOX.encode()] * PENDING_INBOX
        late = Listener(redis, channel)
        await late.start()
        await _settled([late], PENDING_INBOX)
        assert late.kicks == PENDING_INBOX
        await late.wakeups.close()
    finally:
        await gateway.close()


async def test_an_inbox_wakeup_published_by_a_previous_version_is_heard(
    redis: Redis, channel: str
) -> None:
    listener = Listener(redis, channel)
    try:
        await listener.start()
        await redis.publish(channel, INBOX)
        await _settled([listener], 1)
        assert listener.kicks == 1
    finally:
        await listener.wakeups.close()


class _CountedPushes(Wakeups):
    """The gateway's side, counting the round trips its inbox wake-ups take."""

    pushes = 0

    async def _push(self) -> None:
        self.pushes += 1
        await super()._push()


async def test_a_burst_of_commits_shares_its_wakeups_and_none_is_lost(
    redis: Redis, channel: str
) -> None:
    gateway = _CountedPushes(redis, channel)
    try:
        for _ in range(50):  # commits while the first wake-up is on its way
            gateway.inbox()
        async with asyncio.timeout(5):
            while gateway.pushes < 2 or gateway._pushing:
                await asyncio.sleep(0.01)
        assert gateway.pushes == 2  # the first, and one after it for the ones it did not cover
        await redis.delete(f"{channel}:inbox")
        gateway.inbox()  # a commit after the burst is over still wakes someone
        async with asyncio.timeout(5):
            while await redis.llen(f"{channel}:inbox") < 1:
                await asyncio.sleep(0.01)
        assert gateway.pushes == 3
    finally:
        await gateway.close()
