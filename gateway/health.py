"""`/healthz` (database, and Redis when configured) and `/metrics` (Prometheus text).

`/healthz` also names the process (`pid`) that answered, to tell gateway processes apart
behind one port or load balancer.
"""

from __future__ import annotations

import asyncio
import os

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from gateway.keys import ENGINE, METRICS, REDIS

CHECK_TIMEOUT_S = 3.0


async def _check_database(app: web.Application) -> str:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            async with app[ENGINE].connect() as connection:
                await connection.execute(text("SELECT 1"))
        return "ok"
    except Exception as exc:  # any failure means "down"; the kind is reported, not raised
        return f"down: {type(exc).__name__}"


async def _check_redis(app: web.Application) -> str:
    redis = app.get(REDIS)
    if redis is None:
        return "not configured"
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            await redis.ping()
        return "ok"
    except Exception as exc:
        return f"down: {type(exc).__name__}"


async def healthz(request: web.Request) -> web.Response:
    database, redis = await asyncio.gather(_check_database(request.app), _check_redis(request.app))
    checks = {"database": database, "redis": redis}
    down = [name for name, state in checks.items() if state.startswith("down")]
    if down:
        return web.json_response(
            {
                "error": "service_unavailable",
                "detail": "unavailable: " + ", ".join(down),
                "checks": checks,
                "pid": os.getpid(),
            },
            status=503,
        )
    return web.json_response({"status": "ok", "checks": checks, "pid": os.getpid()})


async def metrics(request: web.Request) -> web.Response:
    body = generate_latest(request.app[METRICS].registry)
    response = web.Response(body=body)
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    response.charset = "utf-8"
    return response


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
