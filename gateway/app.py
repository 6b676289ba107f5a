"""`create_app(settings)`: builds nothing at import time; resources live in `cleanup_ctx`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
from aiohttp import web
from pydantic import SecretStr

from channels.base import InboundMessage
from context import TiktokenCounter, load_encoding
from gateway.api import campaigns, context, conversation_templates, conversations, operator
from gateway.channel_catalog import CATALOG
from gateway.config import Settings
from gateway.console import routes as console_routes
from gateway.coordination.dedupe import SeenKeys
from gateway.coordination.locks import InProcessLocks, RedisLocks
from gateway.coordination.redis_client import compaction_queue, make_redis
from gateway.coordination.wakeups import Wakeups
from gateway.customers.forgetting import Forgetting
from gateway.events.outbox import EventOutbox
from gateway.events.sender import EVENT_SENDER, sender_for
from gateway.events.wakeups import EventWakeups
from gateway.http import health, openapi
from gateway.http.idempotency import idempotency_middleware
from gateway.http.middleware import body_limit_middleware, error_middleware, metrics_middleware
from gateway.inbox.processor import InboxProcessor
from gateway.inbox.writer import InboxWriter
from gateway.keys import (
    ACCEPT,
    ADAPTERS,
    ANSWER,
    BACKPRESSURE,
    COUNTER,
    DELIVER,
    ENGINE,
    EVENTS,
    FORGETTING,
    HTTP,
    HUB,
    INBOX,
    INBOX_READY,
    INBOX_WRITER,
    MEMORY,
    METRICS,
    RECALL,
    REDIS,
    SCHEDULER,
    SESSIONS,
    SETTINGS,
    WAKEUPS,
)
from gateway.memory.llm_compactor import llm_compactor_factory
from gateway.memory.queue import CompactionQueue, InProcessQueue
from gateway.memory.recall import RecallCache
from gateway.memory.retention import RetentionSweeper
from gateway.memory.worker import MemoryWorker
from gateway.providers import ModelProvider, make_provider
from gateway.providers.limits import CallLimits, ModelGate
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import OpenAITranscriber
from gateway.registry import (
    AdapterDeps,
    add_channel_routes,
    build_adapters,
    close_adapters,
)
from gateway.runtime.metrics import Metrics
from gateway.storage.engine import engine_for, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.repositories.tenants import SettingsCache
from gateway.tenant_ref import TenantRef
from gateway.turns.accept import Accepted, Acceptor, LotWriter
from gateway.turns.answer import AnswerDeps, Answerer
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
from gateway.turns.scheduler import TurnScheduler
from gateway.turns.service_window import ServiceWindows
from gateway.webchat.fanout import FANOUT, RedisFanout
from gateway.webchat.hub import WebChatHub

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
    # pool holds a connection for every model call allowed in flight (httpx's default of 100,
    # 20 kept alive, would queue calls and reconnect under load), plus room for the rest.
    concurrency = app[SETTINGS].model_concurrency
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, connect=5.0),
        limits=httpx.Limits(
            max_connections=concurrency + OTHER_CONNECTIONS,
            max_keepalive_connections=concurrency,
        ),
    )
    app[HTTP] = client
    yield
    await client.aclose()


def secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def providers_for(app: web.Application) -> ProviderPool:
    settings = app[SETTINGS]
    http = app[HTTP]
    api_key = secret(settings.model_api_key)

    def make(spec: str) -> ModelProvider:
        return make_provider(
            spec,
            http=http,
            base_url=settings.model_base_url,
            api_key=api_key,
            count=app[COUNTER].count,
        )

    return ProviderPool(make(settings.model), make)


def transcriber_for(settings: Settings, http: httpx.AsyncClient) -> OpenAITranscriber | None:
    if not settings.transcriber_model:
        return None
    return OpenAITranscriber(
        http,
        base_url=settings.transcriber_base_url
        or settings.model_base_url
        or "https://api.openai.com/v1",
        api_key=secret(settings.transcriber_api_key) or secret(settings.model_api_key),
        model=settings.transcriber_model,
    )


async def flow_ctx(app: web.Application) -> AsyncIterator[None]:
    """The message flow, top to bottom: a webhook commits an inbox row (the writer); the inbox
    processor accepts each row (identity, message, pending turn); the scheduler drains each
    conversation through the answer step, which hands every reply to the deliver step."""
    settings = app[SETTINGS]
    redis = app.get(REDIS)
    http = app[HTTP]
    sessions = app[SESSIONS]
    # With Redis, replies reach sockets held by any gateway process (gateway/webchat/fanout.py).
    fanout = RedisFanout(redis) if redis is not None else None
    hub = WebChatHub(fanout.publish if fanout is not None else None)
    adapters = build_adapters(AdapterDeps(settings, http, hub))
    queue: CompactionQueue = (
        compaction_queue(redis, settings) if redis is not None else InProcessQueue()
    )
    compactor_for = llm_compactor_factory(
        http, base_url=settings.model_base_url, api_key=secret(settings.model_api_key)
    )
    memory = MemoryWorker(sessions, app[COUNTER], queue, compactor_for)
    backpressure = Backpressure()
    tenant_cache = SettingsCache()
    recall = RecallCache()
    forgetting = Forgetting(recall, redis)
    forgetting.listen()
    accept = Acceptor(
        sessions=sessions,
        writer=LotWriter(
            settings=settings,
            counter=app[COUNTER],
            evidence={entry.name: entry.evidence for entry in CATALOG},
            tenant_cache=tenant_cache,
            events=app[EVENTS],
        ),
        backpressure=backpressure,
        metrics=app[METRICS],
        seen=SeenKeys(redis) if redis is not None else None,
        memory=queue,
    )
    deliver = Deliverer(
        sessions=sessions,
        adapters=adapters,
        windows=ServiceWindows(sessions, tenant_cache),
    )
    gate = ModelGate(
        process_limit=settings.model_concurrency,
        provider_limits=CallLimits(
            in_flight=settings.model_max_in_flight, per_minute=settings.model_requests_per_minute
        ),
    )
    answer = Answerer(
        AnswerDeps.of(
            sessions=sessions,
            counter=app[COUNTER],
            tenant_cache=tenant_cache,
            adapters=adapters,
            gate=gate,
            events=app[EVENTS],
        ),
        locks=RedisLocks(redis) if redis is not None else InProcessLocks(),
        providers=providers_for(app),
        recall_cache=recall,
        backpressure=backpressure,
        deliverer=deliver,
        memory=queue,
        transcriber=transcriber_for(settings, http),
        message_facts_for=compactor_for,
    )
    # A gateway process that only acknowledges (settings make sure it has Redis) wakes the
    # background process instead of storing and answering itself.
    wakeups = Wakeups(redis) if redis is not None else None
    hand_off = None if settings.run_background else wakeups
    scheduler = TurnScheduler(
        answer.drain,
        answer.pending_conversations,
        redeliver=deliver.retry_deliveries,
        max_active=settings.model_concurrency,
        hand_off=hand_off.turn if hand_off is not None else None,
    )

    async def accept_in_background(message: InboundMessage, tenant: TenantRef) -> Accepted:
        return await accept.accept(message, tenant=tenant, background=True)

    processor = InboxProcessor(
        sessions,
        accept_in_background,
        stored=scheduler.kick,
        pause=backpressure.yield_to_ingest,
        lease=timedelta(seconds=settings.inbox_lease_s),
    )
    scheduler.add_intake(processor.kick)
    inbox_ready = hand_off.inbox if hand_off is not None else processor.kick
    writer = InboxWriter(sessions, committed=inbox_ready)
    if wakeups is not None:
        app[WAKEUPS] = wakeups
        if hand_off is None:
            wakeups.listen(inbox=processor.kick, turn=scheduler.kick)
    app[HUB] = hub
    app[ADAPTERS] = adapters
    app[BACKPRESSURE] = backpressure
    app[RECALL] = recall
    app[FORGETTING] = forgetting
    app[ACCEPT] = accept
    app[ANSWER] = answer
    app[DELIVER] = deliver
    app[SCHEDULER] = scheduler
    app[INBOX_WRITER] = writer
    app[INBOX] = processor
    app[INBOX_READY] = inbox_ready
    app[MEMORY] = memory
    if fanout is not None:
        app[FANOUT] = fanout
        fanout.start(hub.broadcast)
    scheduler.start()
    if settings.run_compaction and settings.run_background:
        memory.start()
    # Retention runs where the rest of the background work does (not in gateway processes
    # that only acknowledge); two such processes running it at once delete each row once.
    sweeper = (
        RetentionSweeper(sessions, interval_s=settings.retention_interval_s, metrics=app[METRICS])
        if settings.run_background
        else None
    )
    if sweeper is not None:
        sweeper.start()
    # Events go out from the processes that run background work; the others only record them
    # and, with Redis, wake the senders after each commit.
    sender = sender_for(settings, sessions, http, app[METRICS])
    event_wakeups = (
        EventWakeups(redis) if redis is not None and settings.events_url is not None else None
    )
    if sender is not None:
        app[EVENT_SENDER] = sender
        app[EVENTS].wake = sender.wake
        if event_wakeups is not None:
            event_wakeups.listen(sender.wake)
        sender.start()
    elif event_wakeups is not None:
        app[EVENTS].wake = event_wakeups.publish
    yield
    if sweeper is not None:
        await sweeper.close()
    if event_wakeups is not None:
        await event_wakeups.close()
    if sender is not None:
        await sender.close()
    await writer.close()
    if wakeups is not None:
        await wakeups.close()
    await processor.close()
    await scheduler.close()
    await deliver.close()
    await memory.close()
    await forgetting.close()
    if fanout is not None:
        await fanout.close()
    await hub.close_all()
    await close_adapters(adapters)


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
            metrics_middleware,
            error_middleware,
            body_limit_middleware,
            idempotency_middleware,
        ],
        client_max_size=settings.max_body_bytes,
    )
    app[SETTINGS] = settings
    app[EVENTS] = EventOutbox(enabled=settings.events_url is not None)
    app[METRICS] = Metrics.create()
    # The tokenizer is loaded once per process and shared (it is read-only).
    app[COUNTER] = TiktokenCounter(load_encoding())
    app.cleanup_ctx.extend([database_ctx, redis_ctx, http_ctx, flow_ctx])
    app.on_shutdown.append(_close_webchat_sockets)
    health.add_routes(app)
    openapi.add_routes(app)
    campaigns.add_routes(app)
    operator.add_routes(app)
    conversations.add_routes(app)
    conversation_templates.add_routes(app)
    console_routes.add_routes(app)
    context.add_routes(app)
    add_channel_routes(app)
    return app
