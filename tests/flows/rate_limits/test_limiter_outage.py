"""The limiter fails open: with its Redis killed, the doors let requests through (counted in
`relaydesk_rate_limiter_unavailable`) instead of refusing every visitor; once Redis is back
(empty, as after losing a cache node) the limits hold again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from tests.support.private_redis import private_redis
from tests.support.stack import running_stack

# Serial: a private Redis server killed and restarted.
pytestmark = pytest.mark.serial

LIMIT = 60  # new visitor ids per address and hour, by default
# After a failure the limiter leaves Redis alone for a second (`limiter.BACKOFF_S`).
PAST_THE_BACKOFF_S = 2.0


async def _new_visitor(client: TestClient) -> int:  # type: ignore[type-arg]
    response = await client.post("/webchat/visitors")
    await response.read()
    return int(response.status)


async def _metric(client: TestClient, name: str) -> float:  # type: ignore[type-arg]
    text = await (await client.get("/metrics")).text()
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return float(line.split()[1])


async def test_the_doors_stay_open_while_the_limiters_redis_is_down(tmp_path: Path) -> None:
    async with private_redis(tmp_path) as redis:
        async with running_stack("production", tmp_path, RELAYDESK_REDIS_URL=redis.url) as stack:
            client = stack.client
            assert [await _new_visitor(client) for _ in range(LIMIT + 1)][-2:] == [201, 429]

            redis.kill()
            assert [await _new_visitor(client) for _ in range(5)] == [201] * 5
            assert await _metric(client, "relaydesk_rate_limiter_unavailable_total") >= 1

            await redis.restart()
            await asyncio.sleep(PAST_THE_BACKOFF_S)  # the limiter looks at Redis again
            statuses = [await _new_visitor(client) for _ in range(LIMIT + 1)]
            assert statuses == [201] * LIMIT + [429]
