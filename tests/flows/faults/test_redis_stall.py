"""Redis calls cancelled while the server's replies are stalled (a TCP proxy holding them) never
deliver one request's reply to another (the bug class of CVE-2023-28858/28859).

redis-py (8.x) closes a connection whose command was interrupted by any exception, cancellation
included, before it can go back to the pool, and checks a pooled connection for unread data
before reuse; the late reply then goes to a closed socket. These tests hold that for the raw
client and for our own users of it — the dedupe fast path and the conversation locks — after
`wait_for` timeouts and `task.cancel()`, mid-command and mid-handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from gateway.coordination.dedupe import SeenKeys, Sighting
from gateway.coordination.locks import RedisLocks
from tests.support.private_redis import PrivateRedis, private_redis
from tests.support.stalling_proxy import StallingProxy

# Serial: a private Redis server behind a stalling proxy; its timeouts are measured.
pytestmark = pytest.mark.serial

KEYS = {f"stall:k{i}": f"v{i}" for i in range(60)}


@contextlib.asynccontextmanager
async def _through_proxy(tmp_path: Path) -> AsyncIterator[tuple[PrivateRedis, StallingProxy]]:
    async with private_redis(tmp_path) as server:
        proxy = StallingProxy("127.0.0.1", server.port)
        await proxy.start()
        direct = server.client()
        try:
            await direct.mset(KEYS)
        finally:
            await direct.aclose()
        try:
            yield server, proxy
        finally:
            await proxy.close()


def _client(proxy: StallingProxy) -> Redis:
    return Redis(host="127.0.0.1", port=proxy.port, socket_connect_timeout=1, socket_timeout=5)


async def _cancel_while_stalled(proxy: StallingProxy, client: Redis) -> None:
    """Commands whose replies are held: some time out, some are cancelled, some in a new
    connection's handshake (the one opened after the previous was closed)."""
    proxy.stall()
    for i in range(3):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(client.get(f"stall:k{i}"), 0.1)
    tasks = [asyncio.create_task(client.get(f"stall:k{i}")) for i in range(10, 20)]
    await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(result, asyncio.CancelledError) for result in results), results
    proxy.resume()


async def test_late_replies_never_reach_the_next_command(tmp_path: Path) -> None:
    async with _through_proxy(tmp_path) as (_, proxy):
        client = _client(proxy)
        try:
            assert await client.get("stall:k0") == b"v0"
            await _cancel_while_stalled(proxy, client)
            # Commands left waiting (not cancelled) through a stall get their own replies too.
            proxy.stall()
            waiting = [asyncio.create_task(client.get(f"stall:k{i}")) for i in range(20, 30)]
            await asyncio.sleep(0.1)
            for task in waiting[::2]:
                task.cancel()
            proxy.resume()
            outcomes = await asyncio.gather(*waiting, return_exceptions=True)
            for i, outcome in zip(range(20, 30), outcomes, strict=True):
                if i % 2 == 0:
                    assert isinstance(outcome, asyncio.CancelledError)
                else:
                    assert outcome == f"v{i}".encode()
            for _ in range(3):
                keys = list(KEYS)
                got = await asyncio.gather(*(client.get(key) for key in keys))
                assert got == [KEYS[key].encode() for key in keys]
            # The connections whose replies were given up on were closed, not reused.
            assert proxy.connections > 2
        finally:
            await client.aclose()


async def test_a_kept_connection_would_read_the_stale_reply(tmp_path: Path) -> None:
    """The control: the proxy really delivers a held reply late, so a client that kept the
    connection after giving up on a command would hand that reply to the next one."""
    async with _through_proxy(tmp_path) as (_, proxy):
        reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
        try:
            proxy.stall()
            writer.write(b"GET stall:k1\r\n")
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(reader.readline(), 0.1)  # given up on
            proxy.resume()
            writer.write(b"GET stall:k2\r\n")
            assert await reader.readline() == b"$2\r\n"
            assert await reader.readline() == b"v1\r\n"  # the first command's reply
        finally:
            writer.close()


async def test_dedupe_fast_path_answers_each_call_after_cancellations(tmp_path: Path) -> None:
    async with _through_proxy(tmp_path) as (server, proxy):
        client = _client(proxy)
        seen = SeenKeys(client, budget_s=1.0, backoff_s=0.0)
        direct = server.client()
        try:
            assert await seen.sight("test", "warm") is Sighting.FIRST
            proxy.stall()
            # Out of budget: unknown, and the database constraint would decide.
            stalled = await asyncio.gather(*(seen.sight("test", f"stalled{i}") for i in range(5)))
            assert set(stalled) == {Sighting.UNKNOWN} and seen.degraded
            await _cancel_while_stalled(proxy, client)
            # Half the ids were seen before: SET NX answers OK for one half and nil for the
            # other, so any swapped reply shows as a wrong sighting.
            ids = [f"id{i}" for i in range(60)]
            await direct.mset({f"relaydesk:seen:test:{i}": "1" for i in ids[::2]})
            got = await asyncio.gather(*(seen.sight("test", i) for i in ids))
            assert got == [Sighting.REPEAT if n % 2 == 0 else Sighting.FIRST for n in range(60)]
            assert not seen.degraded
        finally:
            await direct.aclose()
            await client.aclose()


async def test_conversation_locks_get_their_own_fences_after_cancellations(
    tmp_path: Path,
) -> None:
    async with _through_proxy(tmp_path) as (server, proxy):
        client = _client(proxy)
        locks = RedisLocks(client, prefix="stall", renew=False)
        direct = server.client()

        async def fence_of(key: str) -> int | None:
            async with locks.hold(key) as held:
                return held.fence

        try:
            proxy.stall()
            for i in range(3):
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(fence_of(f"stalled{i}"), 0.1)
            await _cancel_while_stalled(proxy, client)
            # Each conversation's fence counter starts far from the others'.
            await direct.mset({f"stall:fence:c{i}": 1000 * i for i in range(30)})
            fences = await asyncio.gather(*(fence_of(f"c{i}") for i in range(30)))
            assert fences == [1000 * i + 1 for i in range(30)]
            assert await direct.keys("stall:lock:c*") == []  # every lock released
        finally:
            await direct.aclose()
            await client.aclose()
