"""`create_app(settings)`: builds nothing at import time; resources live in `cleanup_ctx`:
the database, Redis, the HTTP client, then the message flow (`gateway.flow`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import httpx
from aiohttp import web

from context import TiktokenCounter, load_encoding
from gateway.api import (
    campaigns,
    canned_replies,
    context,
    conversation_notes,
    conversation_templates,
    conversations,
    knowledge,
    operator,
    template_choices,
)
from gateway.api import settings as settings_api
from gateway.api.knowledge import KNOWLEDGE_FORGETTING
from gateway.config import Settings
from gateway.console import routes as console_routes
from gateway.coordination.redis_client import make_redis
from gateway.events.sender import EVENT_SENDER
from gateway.flow import Flow, Resources, build_flow
from gateway.http import health, jwks, landing, openapi
from gateway.http.access_log import access_log_middleware
from gateway.http.deadlines import body_deadline_middleware
from gateway.http.idempotency import idempotency_middleware
from gateway.http.middleware import body_limit_middleware, error_middleware, metrics_middleware
from gateway.http.refusals import refusal_log_middleware
from gateway.keys import (
    ACCEPT,
    ADAPTERS,
    ANSWER,
    BACKPRESSURE,
    COUNTER,
    DELIVER,
    ENGINE,
    EVENTS,
    FETCHER,
    FORGETTING,
    HTTP,
    HUB,
    INBOX,
    INBOX_READY,
    INBOX_WRITER,
    KNOWLEDGE,
    MEMORY,
    METRICS,
    RATE_LIMITER,
    RECALL,
    REDIS,
    SCHEDULER,
    SESSIONS,
    SETTINGS,
    TASKS,
    WAKEUPS,
)
from gateway.rate_limits.doors import rate_limits_ctx
from gateway.registry import add_channel_routes
from gateway.runtime.metrics import Metrics
from gateway.storage.engine import engine_for, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.tools.assertion import signer_for
from gateway.webchat.fanout import FANOUT
from outbound import SafeFetcher
from outbound.shards import ShardedTransport, kept_alive

log = logging.getLogger("relaydesk.app")

# Outbound connections beside the model calls' (transcription, media downloads, other APIs).
OTHER_CONNECTIONS = 32


async def database_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    engine = engine_for(settings)
    if settings.should_auto_migrate:
        await upgrade(engine)
    app[ENGINE] = engine
    app[SESSIONS] = make_sessionmaker(engine)
    yield
    await engine.dispose()


async def redis_ctx(app: web.Application) -> AsyncIterator[None]:
    url = app[SETTINGS].redis_url
    if url is None:
        yield
        return
    client = make_redis(url)
    app[REDIS] = client
    yield
    await client.aclose()


async def http_ctx(app: web.Application) -> AsyncIterator[None]:
    # One shared client with explicit timeouts for every outbound call (model, channels). Its
    # pools hold a connection for every model call allowed in flight (httpx's default of 100,
    # 20 kept alive, would queue calls and reconnect under load), plus room for the rest,
    # spread over shards (`outbound.shards`: httpcore's bookkeeping grows with the square of
    # a pool's connections).
    concurrency = app[SETTINGS].model_concurrency
    limits = kept_alive(concurrency + OTHER_CONNECTIONS)
    tls = httpx.create_ssl_context()  # one for all pools: loading the CA bundle takes ~30 ms
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, connect=5.0),
        transport=ShardedTransport.of(lambda: httpx.AsyncHTTPTransport(verify=tls, limits=limits)),
    )
    app[HTTP] = client
    # Fetches of URLs others chose go through their own client, checked on every connection.
    fetcher = SafeFetcher(app[SETTINGS].fetch_policy)
    app[FETCHER] = fetcher
    yield
    await fetcher.aclose()
    await client.aclose()


async def flow_ctx(app: web.Application) -> AsyncIterator[None]:
    """The message flow (`gateway.flow.build_flow`), its parts under the app's keys; on
    cleanup its parts close in the reverse order of starting."""
    resources = Resources(
        settings=app[SETTINGS],
        sessions=app[SESSIONS],
        redis=app.get(REDIS),
        http=app[HTTP],
        fetcher=app[FETCHER],
        counter=app[COUNTER],
        metrics=app[METRICS],
        rate_limiter=app[RATE_LIMITER],
        signer=app[jwks.SIGNER],
    )
    async with AsyncExitStack() as stack:
        keep_flow(app, build_flow(resources, stack))
        yield


def keep_flow(app: web.Application, flow: Flow) -> None:
    """The flow's parts under the keys routes, the console and the CLI read."""
    app[TASKS] = flow.tasks
    app[HUB] = flow.hub
    app[ADAPTERS] = flow.adapters
    app[EVENTS] = flow.events
    app[BACKPRESSURE] = flow.backpressure
    app[RECALL] = flow.recall
    app[FORGETTING] = flow.forgetting
    app[KNOWLEDGE] = flow.knowledge
    app[KNOWLEDGE_FORGETTING] = flow.knowledge_forgetting
    app[MEMORY] = flow.memory
    app[ACCEPT] = flow.accept
    app[ANSWER] = flow.answer
    app[DELIVER] = flow.deliver
    app[SCHEDULER] = flow.scheduler
    app[INBOX] = flow.inbox
    app[INBOX_WRITER] = flow.inbox_writer
    app[INBOX_READY] = flow.inbox_ready
    if flow.fanout is not None:
        app[FANOUT] = flow.fanout
    if flow.event_sender is not None:
        app[EVENT_SENDER] = flow.event_sender
    if flow.wakeups is not None:
        app[WAKEUPS] = flow.wakeups


async def _close_webchat_sockets(app: web.Application) -> None:
    """Open web chat sockets are closed when the shutdown starts: the server waits for every
    open connection's handler before the cleanup contexts run, so a socket left to them would
    hold the shutdown for its whole timeout."""
    hub = app.get(HUB)
    if hub is not None:
        await hub.close_all()


def create_app(settings: Settings) -> web.Application:
    app = web.Application(
        middlewares=[
            access_log_middleware,
            body_deadline_middleware,
            metrics_middleware,
            error_middleware,
            refusal_log_middleware,
            body_limit_middleware,
            idempotency_middleware,
        ],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings
    app[METRICS] = Metrics.create()
    # The tokenizer is loaded once per process and shared (it is read-only).
    app[COUNTER] = TiktokenCounter(load_encoding())
    app.cleanup_ctx.extend([database_ctx, redis_ctx, rate_limits_ctx, http_ctx, flow_ctx])
    app.on_shutdown.append(_close_webchat_sockets)
    health.add_routes(app)
    openapi.add_routes(app)
    landing.add_routes(app)
    jwks.add_routes(app, signer_for(settings))
    campaigns.add_routes(app)
    operator.add_routes(app)
    conversations.add_routes(app)
    conversation_templates.add_routes(app)
    conversation_notes.add_routes(app)
    canned_replies.add_routes(app)
    knowledge.add_routes(app)
    template_choices.add_routes(app)
    settings_api.add_routes(app)
    console_routes.add_routes(app)
    context.add_routes(app)
    add_channel_routes(app)
    return app
