"""The HTTP side of the rate limits: the app's limiter, built once, and the check a public
door makes (its tenant's rate, read through a short-lived settings cache: no query per request).

A door over its limit answers `429 {"error": "rate_limited"}` with `Retry-After`; the websocket
answers an error frame instead (`gateway.webchat.routes`). Provider webhooks are never refused
here: the provider would retry, and a customer's messages are paced where the model is called
(`gateway.turns.answer.pacing`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from gateway.http.errors import TooManyRequests
from gateway.http.tenant import tenant_of
from gateway.keys import METRICS, RATE_LIMITER, REDIS, SESSIONS, SETTINGS
from gateway.rate_limits.limiter import Door, RateLimiter, Verdict
from gateway.storage.repositories.tenants import SettingsCache

__all__ = ["Door", "check", "enforce", "rate_limits_ctx"]

# The tenants' settings as the doors read them (their own cache: the flow's is its own).
DOOR_SETTINGS = web.AppKey("door_settings", SettingsCache)

_REFUSED = {
    Door.VISITOR_IDS: "too many new visitor ids from this address",
    Door.WEBCHAT_MESSAGES: "too many messages from this visitor",
    Door.WEBCHAT_FRAMES: "too many frames from this visitor",
    Door.CONSOLE_LOGINS: "too many login attempts from this address",
}


async def rate_limits_ctx(app: web.Application) -> AsyncIterator[None]:
    """The limiter on Redis when the process has it (every process counts together), else in
    this process's memory."""
    redis = app.get(REDIS)
    metrics = app[METRICS]
    if redis is not None:
        app[RATE_LIMITER] = RateLimiter.shared(redis, app[SETTINGS].database_url, metrics)
    else:
        app[RATE_LIMITER] = RateLimiter.in_process(metrics)
    app[DOOR_SETTINGS] = SettingsCache()
    yield


async def check(
    request: web.Request, door: Door, subject: str, *, channel: str | None = None
) -> Verdict:
    """Count one use of `door` by `subject` (a client address, a visitor id) for the request's
    tenant."""
    tenant = tenant_of(request)
    async with request.app[SESSIONS]() as session:  # a connection only on a cache miss
        settings = await request.app[DOOR_SETTINGS].for_tenant(session, tenant, channel=channel)
    # Counted per domain, not per host: a made-up Host header must not open a fresh window.
    return await request.app[RATE_LIMITER].hit(
        door, door.rate(settings.rate_limits), tenant.domain, subject
    )


async def enforce(
    request: web.Request, door: Door, subject: str, *, channel: str | None = None
) -> None:
    """`check`, refusing with 429 and `Retry-After` over the limit."""
    verdict = await check(request, door, subject, channel=channel)
    if not verdict.allowed:
        raise TooManyRequests(
            f"{_REFUSED[door]}; retry in {verdict.retry_after_s} s",
            retry_after_s=verdict.retry_after_s,
            code="rate_limited",
        )
