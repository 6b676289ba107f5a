"""What a `relaydesk` command that changes stored data opens: the database (migrated first
where the settings say so) and, when configured, Redis, to tell running processes what
changed; both closed when the command ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.config import Settings
from gateway.coordination.redis_client import make_redis
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade


@dataclass(frozen=True, slots=True)
class CommandStore:
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis | None


@asynccontextmanager
async def command_store(settings: Settings) -> AsyncIterator[CommandStore]:
    engine = make_engine(settings.database_url)
    redis = make_redis(settings.redis_url) if settings.redis_url else None
    try:
        if settings.should_auto_migrate:
            await upgrade(engine)
        yield CommandStore(make_sessionmaker(engine), redis)
    finally:
        if redis is not None:
            await redis.aclose()
        await engine.dispose()
