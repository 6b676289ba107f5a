"""Several gateway apps on one fresh PostgreSQL database and Redis, as separate processes of one
deployment would be (each on its own test server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer

from gateway.app import create_app
from gateway.config import Settings
from gateway.webchat.fanout import FANOUT
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    require_postgres_and_redis,
)
from tests.support.stack import API_KEY, WEBCHAT_SECRET


@asynccontextmanager
async def shared_gateways(
    per_app: Sequence[dict[str, object]],
) -> AsyncIterator[list[TestClient]]:  # type: ignore[type-arg]
    """One started app per entry of `per_app` (its settings on top of the shared ones), in
    order: the first migrates the database, the others find it at head."""
    await require_postgres_and_redis()
    url = await create_database()
    shared: dict[str, object] = {
        "RELAYDESK_API_KEY": API_KEY,
        "RELAYDESK_WEBCHAT_SECRET": WEBCHAT_SECRET,
        "RELAYDESK_DATABASE_URL": url,
        "RELAYDESK_REDIS_URL": REDIS_URL,
        "RELAYDESK_AUTO_MIGRATE": True,
        # Redis outlives the test: these gateways' login attempts are counted apart.
        "RELAYDESK_LOGIN_ATTEMPTS_PREFIX": f"relaydesk-test:{uuid.uuid4().hex}:login",
    }
    try:
        async with AsyncExitStack() as stack:
            clients = []
            for values in per_app:
                settings = Settings(**{**shared, **values})  # type: ignore[arg-type]
                client = TestClient(TestServer(create_app(settings)))
                await client.start_server()
                stack.push_async_callback(client.close)
                async with asyncio.timeout(5):
                    await client.app[FANOUT].wait_subscribed()
                clients.append(client)
            yield clients
    finally:
        await drop_database(url)


async def next_frame(socket: Any, timeout: float = 10.0) -> dict[str, Any]:
    """The next web chat frame on a test websocket (text, JSON)."""
    message = await socket.receive(timeout=timeout)
    assert message.type == WSMsgType.TEXT, message
    frame: dict[str, Any] = message.json()
    return frame
