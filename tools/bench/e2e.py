"""End-to-end timing of ``POST /v1/context`` and the PostgreSQL database the benchmark uses.

The real app (`create_app`) listens on 127.0.0.1 on a free port; an httpx client on the same
event loop sends the requests with the API key, so each sample is the whole request: HTTP,
auth, body validation, tenant settings, identity resolution, storage reads and the build.

PostgreSQL gets a temporary database (created through the given URL, dropped at the end), so
the app's own engine sees the schema in ``public`` without any search_path setting.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from aiohttp import web
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from gateway.app import create_app
from gateway.config import Settings
from tools.bench.measure import Timing, time_async

API_KEY = "relaydesk-bench-key"


class EndpointError(RuntimeError):
    """``POST /v1/context`` did not answer 200 during the benchmark."""


@dataclass(frozen=True, slots=True)
class EndpointWindow:
    estimated_tokens: int
    input_budget: int
    messages: int


@asynccontextmanager
async def running_gateway(database_url: str) -> AsyncIterator[str]:
    """The gateway on an already migrated database; yields its base URL."""
    settings = Settings(
        RELAYDESK_DATABASE_URL=database_url,
        RELAYDESK_API_KEY=API_KEY,
        RELAYDESK_REDIS_URL=None,
        RELAYDESK_AUTO_MIGRATE=False,
    )
    runner = web.AppRunner(create_app(settings), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def time_context_endpoint(
    client: httpx.AsyncClient,
    base_url: str,
    external_ids: Mapping[int, str],
    message: str,
    repeat: int,
) -> dict[int, tuple[Timing, EndpointWindow]]:
    """Latency of ``POST /v1/context`` for each WhatsApp identity (by size), interleaved."""
    headers = {"Authorization": f"Bearer {API_KEY}"}

    def call(external_id: str) -> Callable[[], Awaitable[httpx.Response]]:
        body = {"channel": "whatsapp", "external_id": external_id, "message": message}
        return lambda: client.post(f"{base_url}/v1/context", json=body, headers=headers)

    timed = await time_async(
        {size: call(external_id) for size, external_id in external_ids.items()},
        repeat,
        warmup=2,
    )
    return {size: (timing, _window(response)) for size, (timing, response) in timed.items()}


def _window(response: httpx.Response) -> EndpointWindow:
    if response.status_code != 200:
        raise EndpointError(f"POST /v1/context answered {response.status_code}: {response.text}")
    body = response.json()
    report = body["report"]
    return EndpointWindow(
        estimated_tokens=int(report["estimated_tokens"]),
        input_budget=int(report["input_budget"]),
        messages=len(body["messages"]),
    )


async def postgres_unreachable(url: str) -> str | None:
    """None when the server answers, else why not (for the skip message)."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with asyncio.timeout(5):
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        return None
    except Exception as exc:  # any failure means: skip PostgreSQL, say why
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        await engine.dispose()


@asynccontextmanager
async def temporary_database(admin_url: str) -> AsyncIterator[str]:
    """Create ``relaydesk_bench_<random>`` next to ``admin_url``'s database; drop it on exit."""
    name = f"relaydesk_bench_{uuid.uuid4().hex[:12]}"
    admin = create_async_engine(admin_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as connection:
            await connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as connection:
                try:
                    await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                except DBAPIError:  # servers before 13 have no FORCE; ours closed everything
                    await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    finally:
        await admin.dispose()
