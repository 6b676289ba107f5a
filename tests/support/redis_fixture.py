"""The ``redis`` fixture: a client of the test Redis (registered for every test by
``tests/conftest.py``); without a reachable Redis the test is skipped, or fails where services
are required."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from tests.support.databases import REDIS_URL, redis_reachable, unavailable


@pytest.fixture
async def redis():  # type: ignore[no-untyped-def]
    why = await redis_reachable()
    if why is not None:
        unavailable("Redis", why)
    client = Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()
