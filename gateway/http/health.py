"""`/healthz` (database, and Redis when configured) and `/metrics` (Prometheus text).

Without the database nothing can be accepted: 503. Without Redis the gateway still accepts
every message (dedupe falls back to the database, jobs are kept, turns wait for the sweep), so
it answers 200 with `"status": "degraded"`: a health check that restarted every gateway during
a Redis outage would only turn a slowdown into an outage.

`/healthz` also names the process that answered by its `instance`: the machine's hostname (a
container's or a pod's own) and a random id made when the process started (never its pid,
which is 1 in every container), to tell gateway processes apart behind one port or load
balancer.

`/metrics` reads the inbox at each scrape (one aggregate statement): messages acknowledged but
not stored yet, how long the oldest has waited, and rows set aside for an operator. With
`RELAYDESK_METRICS_TOKEN` set it answers only `Authorization: Bearer <token>` (401 otherwise);
unset it stays open, and a gateway listening beyond loopback says so in a warning at start.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import secrets
import socket
from datetime import UTC, timedelta

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from gateway.config import Settings
from gateway.http.auth import bearer_matches
from gateway.http.errors import Unauthorized
from gateway.keys import ENGINE, METRICS, REDIS, SESSIONS, SETTINGS
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import conversations, inbox, tenants

log = logging.getLogger("relaydesk.health")

CHECK_TIMEOUT_S = 3.0


def _new_instance_id() -> str:
    return f"{socket.gethostname()}-{secrets.token_hex(4)}"


# This process's name in `/healthz`; a forked child makes its own.
_instance_id = _new_instance_id()


def _renew_instance_id() -> None:
    global _instance_id
    _instance_id = _new_instance_id()


os.register_at_fork(after_in_child=_renew_instance_id)


def instance_id() -> str:
    """The id this process answers `/healthz` with: "<hostname>-<8 random hex digits>"."""
    return _instance_id


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
    if database.startswith("down"):
        return web.json_response(
            {
                "error": "service_unavailable",
                "detail": "unavailable: database",
                "checks": checks,
                "instance": instance_id(),
            },
            status=503,
        )
    status = "degraded" if redis.startswith("down") else "ok"
    return web.json_response({"status": status, "checks": checks, "instance": instance_id()})


async def _read_inbox(app: web.Application) -> None:
    """Set the inbox gauges from the database; on failure they are left as last read (the
    database check of `/healthz` reports the outage)."""
    gauges = app[METRICS]
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            async with app[SESSIONS]() as session:
                depth = await inbox.depth(session)
    except Exception as exc:
        log.warning("inbox gauges not read", extra={"fields": {"error": type(exc).__name__}})
        return
    gauges.inbox_waiting.set(depth.waiting)
    gauges.inbox_set_aside.set(depth.set_aside)
    oldest = depth.oldest_waiting
    if oldest is not None and oldest.tzinfo is None:  # SQLite hands an aggregate back naive
        oldest = oldest.replace(tzinfo=UTC)
    age = 0.0 if oldest is None else (utcnow() - oldest).total_seconds()
    gauges.inbox_oldest_seconds.set(max(0.0, age))


async def _read_waiting(app: web.Application) -> None:
    """Set the gauge of conversations waiting for an operator too long (left as last read on
    failure, as the inbox's)."""
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            async with app[SESSIONS]() as session:
                tenant = await tenants.tenant_settings(session)
                alert = timedelta(seconds=tenant.handoff_waiting_alert_s)
                late = await conversations.count_waiting_since(session, utcnow() - alert)
    except Exception as exc:
        log.warning("handoff gauge not read", extra={"fields": {"error": type(exc).__name__}})
        return
    app[METRICS].conversations_waiting_too_long.set(late)


async def metrics(request: web.Request) -> web.Response:
    token = request.app[SETTINGS].metrics_token
    if token is not None and not bearer_matches(request, token):
        raise Unauthorized("/metrics needs Authorization: Bearer <RELAYDESK_METRICS_TOKEN>")
    await _read_inbox(request.app)
    await _read_waiting(request.app)
    body = generate_latest(request.app[METRICS].registry)
    response = web.Response(body=body)
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    response.charset = "utf-8"
    return response


def warn_if_metrics_open(settings: Settings, host: str) -> None:
    """Log a warning when `/metrics` is open to more than this machine: no token, and a bind
    address other than loopback (a hostname is taken to reach beyond it)."""
    if settings.metrics_token is not None or _is_loopback(host):
        return
    log.warning(
        "/metrics is open to anyone who reaches this address: set RELAYDESK_METRICS_TOKEN",
        extra={"fields": {"host": host}},
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics)
