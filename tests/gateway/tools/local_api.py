"""A local business API for the action tests, and a fetcher allowed to reach it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web

from outbound.fetcher import SafeFetcher
from outbound.policy import FetchPolicy


@asynccontextmanager
async def local_api(app: web.Application) -> AsyncIterator[tuple[str, SafeFetcher]]:
    """``app`` on a loopback port (a handler still waiting is cut at once when the test ends),
    and a fetcher that may reach loopback; yields (base URL, fetcher)."""
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        yield f"http://127.0.0.1:{port}", fetcher
    finally:
        await fetcher.aclose()
        await runner.cleanup()
