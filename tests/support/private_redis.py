"""A private `redis-server` on a free port that a test may kill and restart, never the shared
one (`devtools.private_servers.PrivateRedis`); skipped with the reason where redis-server is
missing (a failure under RELAYDESK_TEST_REQUIRE_SERVICES=1)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from devtools import private_servers
from devtools.private_servers import PrivateRedis
from tests.support.databases import unavailable

__all__ = ["PrivateRedis", "private_redis"]


@asynccontextmanager
async def private_redis(directory: Path) -> AsyncIterator[PrivateRedis]:
    why = private_servers.redis_missing()
    if why is not None:
        unavailable("redis-server", why)
    async with private_servers.private_redis(directory) as server:
        yield server
