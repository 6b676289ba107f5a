"""A whole gateway on a real socket, on either backend: `embedded` (SQLite file, in-process
locks and queue) or `production` (a fresh PostgreSQL database and Redis)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from gateway.app import create_app
from gateway.config import Settings
from gateway.keys import PIPELINE, SCHEDULER, SESSIONS
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    postgres_reachable,
    redis_reachable,
    unavailable,
)

API_KEY = "test-api-key"
WEBCHAT_SECRET = "webchat-secret-for-tests-0123456789abcdef"


@dataclass
class Stack:
    client: TestClient  # type: ignore[type-arg]
    backend: str

    @property
    def app(self):  # type: ignore[no-untyped-def]
        return self.client.app

    async def idle(self) -> None:
        """Wait until every accepted message has been answered."""
        await self.client.app[SCHEDULER].sweep()
        await self.client.app[SCHEDULER].idle()

    def sessions(self):  # type: ignore[no-untyped-def]
        return self.client.app[SESSIONS]

    @property
    def pipeline(self):  # type: ignore[no-untyped-def]
        return self.client.app[PIPELINE]


@asynccontextmanager
async def database_url(backend: str, tmp_path: Path) -> AsyncIterator[str]:
    if backend == "embedded":
        yield f"sqlite+aiosqlite:///{tmp_path / 'stack.db'}"
        return
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    url = await create_database()
    try:
        yield url
    finally:
        await drop_database(url)


@asynccontextmanager
async def running_stack(
    backend: str, tmp_path: Path, *, database: str | None = None, **settings: object
) -> AsyncIterator[Stack]:
    """Start the gateway; `database` reuses an existing database URL (a restart)."""
    values: dict[str, object] = {
        "RELAYDESK_API_KEY": API_KEY,
        "RELAYDESK_WEBCHAT_SECRET": WEBCHAT_SECRET,
        "RELAYDESK_AUTO_MIGRATE": True,
    }
    if backend == "production":
        why = await redis_reachable()
        if why is not None:
            unavailable("Redis", why)
        values["RELAYDESK_REDIS_URL"] = REDIS_URL
    values.update(settings)

    async def start(url: str) -> AsyncIterator[Stack]:
        values["RELAYDESK_DATABASE_URL"] = url
        app = create_app(Settings(**values))  # type: ignore[arg-type]
        client = TestClient(TestServer(app))
        await client.start_server()
        try:
            yield Stack(client, backend)
        finally:
            await client.close()

    if database is not None:
        async for stack in start(database):
            yield stack
        return
    async with database_url(backend, tmp_path) as url:
        async for stack in start(url):
            yield stack
