"""A settings change told to every process: each empties its caches of effective settings, so
the next message is handled under the new settings wherever it is answered.

The saving process empties its own caches at once (`SettingsCache.writes`); others hear of it
on one Redis pub/sub channel (`SettingsListener`, started by the flow). Pub/sub is
at-most-once: a process that misses the announcement (reconnecting) still sees the change
when its cached entries expire (`SettingsCache`'s few seconds).
"""

from __future__ import annotations

import logging
from typing import Final

from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.coordination.pubsub import Channel
from gateway.runtime.tasks import TaskOwner
from gateway.storage.repositories.tenants import SettingsCache

log = logging.getLogger("relaydesk.settings")

CHANNEL: Final = "relaydesk:settings"


def forget_cached_settings() -> None:
    """Empty every `SettingsCache` of this process (each sees the count move on its next
    read)."""
    SettingsCache.writes += 1


async def announce_settings_change(redis: Redis | None, level_path: str) -> None:
    """After the change committed: forget here, and (with Redis) in every other process."""
    forget_cached_settings()
    if redis is None:
        return
    try:
        await redis.publish(CHANNEL, level_path)
    except (RedisError, OSError) as exc:
        log.warning(
            "settings change not announced; other processes see it within seconds",
            extra={"fields": {"error": type(exc).__name__}},
        )


class SettingsListener:
    """Forgets cached settings whenever any process announces a change."""

    def __init__(self, redis: Redis, *, owner: TaskOwner) -> None:
        self._channel = Channel(redis, CHANNEL, log=log, what="settings changes", owner=owner)
        self.subscribed = self._channel.subscribed

    def listen(self) -> None:
        async def handle(data: object) -> None:
            forget_cached_settings()

        self._channel.listen(handle)

    async def close(self) -> None:
        await self._channel.close()
