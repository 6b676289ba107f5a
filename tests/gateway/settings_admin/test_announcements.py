"""A settings change saved by one process empties the settings caches of every other one: the
next message there reads the new settings, not the cached ones."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.tasks import TaskOwner
from gateway.settings_admin.announcements import (
    CHANNEL,
    SettingsListener,
    announce_settings_change,
)
from gateway.storage.models import TenantConfig
from gateway.storage.repositories.tenants import SettingsCache


async def test_another_process_change_empties_this_process_cache(
    redis: Redis, session: AsyncSession
) -> None:
    cache = SettingsCache(ttl_s=3600)  # only an announcement can make it read again
    assert (await cache.get(session)).window == 8192
    # Another process writes the row (not through this process's save, which counts here).
    session.add(
        TenantConfig(domain="default", host=None, assistant_id=None, settings={"window": 9000})
    )
    await session.flush()
    assert (await cache.get(session)).window == 8192

    owner = TaskOwner()
    listener = SettingsListener(redis, owner=owner)
    listener.listen()
    await asyncio.wait_for(listener.subscribed.wait(), 5)
    kwargs = redis.connection_pool.connection_kwargs
    other_process = Redis.from_url(
        f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"
    )
    try:
        await other_process.publish(CHANNEL, "domain/default")
    finally:
        await other_process.aclose()
    for _ in range(100):
        if (await cache.get(session)).window == 9000:
            break
        await asyncio.sleep(0.02)
    assert (await cache.get(session)).window == 9000
    await listener.close()


async def test_without_redis_the_change_is_forgotten_here() -> None:
    before = SettingsCache.writes
    await announce_settings_change(None, "domain/default")
    assert SettingsCache.writes == before + 1
