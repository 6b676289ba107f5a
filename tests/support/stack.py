"""A whole gateway on a real socket, on either backend: `embedded` (SQLite file, in-process
locks and queue) or `production` (a fresh PostgreSQL database and Redis)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import func, select

from gateway.app import create_app
from gateway.config import Settings
from gateway.keys import ACCEPT, BACKPRESSURE, DELIVER, INBOX, SCHEDULER, SESSIONS
from gateway.storage.models import InboxMessage, Message
from gateway.turns.accept import Acceptor
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
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
        """Wait until every acknowledged message has been stored and answered."""
        await self.stored()
        await self.client.app[SCHEDULER].sweep()
        await self.client.app[SCHEDULER].idle()

    async def stored(self) -> None:
        """Wait until every acknowledged webhook's message is stored (the inbox is empty)."""
        await self.client.app[INBOX].process_waiting()
        await self.client.app[INBOX].idle()

    def sessions(self):  # type: ignore[no-untyped-def]
        return self.client.app[SESSIONS]

    @property
    def accept(self) -> Acceptor:
        return self.client.app[ACCEPT]

    @property
    def deliver(self) -> Deliverer:
        return self.client.app[DELIVER]

    @property
    def backpressure(self) -> Backpressure:
        return self.client.app[BACKPRESSURE]


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
        # Redis outlives the test: this gateway's login attempts are counted apart.
        values["RELAYDESK_LOGIN_ATTEMPTS_PREFIX"] = f"relaydesk-test:{uuid.uuid4().hex}:login"
    values.update(settings)

    # A context manager, not a bare generator: a test failing inside still closes the client
    # (and its sockets) at once, not whenever the generator is collected.
    @asynccontextmanager
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
        async with start(database) as stack:
            yield stack
        return
    async with database_url(backend, tmp_path) as url, start(url) as stack:
        yield stack


async def inbound_rows(stack: Stack) -> int:
    """Customer messages kept so far: stored as messages, or acknowledged and still waiting in
    the inbox (both count: a refused request must add to neither)."""
    stored = select(func.count()).select_from(Message).where(Message.role == "user")
    # A row whose message is already stored is about to be deleted: counted once, not twice.
    waiting = (
        select(func.count())
        .select_from(InboxMessage)
        .where(
            ~select(Message.id)
            .where(
                Message.channel == InboxMessage.channel,
                Message.provider_message_id == InboxMessage.provider_message_id,
            )
            .exists()
        )
    )
    async with stack.sessions()() as session:
        # One statement, one snapshot: a message moving from the inbox is seen in one place.
        total = await session.scalar(select(stored.scalar_subquery() + waiting.scalar_subquery()))
    return int(total or 0)
