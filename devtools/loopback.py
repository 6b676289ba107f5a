"""An aiohttp app served on a free loopback port: how the local stand-ins of outside services
(Twilio, a model) and the benchmarks' own gateways are reached over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serving_on_loopback(app: web.Application) -> AsyncIterator[str]:
    """``app`` on a free port of 127.0.0.1, without access logs; yields its root URL
    (``http://127.0.0.1:<port>``) and stops the server on leaving."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
