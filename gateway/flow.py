"""The message flow assembled in one place, top to bottom, from the process's resources.

A webhook commits an inbox row (the writer); the inbox processor accepts each row (identity,
message, pending turn); the scheduler drains each conversation through the answer step, which
hands every reply to the deliver step. Web chat sockets, compaction, retention and outbound
events run beside it.

`build_flow` starts every part and pushes its `close` onto the caller's exit stack as it
goes, so the flow stops in the reverse order of starting: what feeds the flow stops before
what it feeds (events and retention, the inbox writer, the wake-ups, the inbox processor, the
scheduler, then deliveries), the channels last, and the task owner after everything.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta

import httpx
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, InboundMessage
from context import TokenCounter
from gateway.channel_catalog import CATALOG
from gateway.config import Settings
from gateway.coordination.dedupe import SeenKeys
from gateway.coordination.locks import InProcessLocks, RedisLocks
from gateway.coordination.redis_client import compaction_queue
from gateway.coordination.wakeups import Wakeups
from gateway.csat.asking import Asker
from gateway.csat.idle import IdleSurveys
from gateway.customers.forgetting import Forgetting
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.from_settings import embedder_for, query_embedder_for
from gateway.embeddings.similarity import HybridSimilarity, KnowledgeSimilarity, RecallVectors
from gateway.events.outbox import EventOutbox
from gateway.events.sender import EventSender, sender_for
from gateway.events.wakeups import EventWakeups
from gateway.inbox.processor import InboxProcessor
from gateway.inbox.writer import InboxWriter
from gateway.knowledge.cache import KnowledgeCache
from gateway.knowledge.forgetting import KnowledgeForgetting
from gateway.knowledge.resync import BackgroundResync
from gateway.knowledge.sync import KnowledgeSync
from gateway.memory.llm_compactor import llm_compactor_factory
from gateway.memory.queue import CompactionQueue, InProcessQueue
from gateway.memory.recall import RecallCache
from gateway.memory.retention import RetentionSweeper
from gateway.memory.worker import MemoryWorker
from gateway.models_from_settings import providers_for, secret, transcriber_for
from gateway.providers.limits import CallLimits, ModelGate
from gateway.rate_limits.limiter import RateLimiter
from gateway.registry import AdapterDeps, build_adapters, close_adapters
from gateway.runtime.metrics import Metrics
from gateway.runtime.tasks import TaskOwner
from gateway.settings_admin.announcements import SettingsListener
from gateway.storage.repositories.tenants import SettingsCache
from gateway.tenant_ref import TenantRef
from gateway.tools.assertion import AssertionSigner
from gateway.tools.mcp_actions import McpActions
from gateway.tools.runner import ActionRunner
from gateway.tools.state import StateSource
from gateway.tools.verification import CodeSender
from gateway.turns.accept import Accepted, Acceptor, LotWriter
from gateway.turns.answer import AnswerDeps, Answerer, AnswerSteps, ModelPacing
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
from gateway.turns.scheduler import TurnScheduler
from gateway.turns.service_window import ServiceWindows
from gateway.webchat.fanout import RedisFanout
from gateway.webchat.hub import WebChatHub
from outbound import SafeFetcher


@dataclass(frozen=True, slots=True)
class Resources:
    """What the flow is built from (the app's `cleanup_ctx` opens them before it)."""

    settings: Settings
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis | None
    http: httpx.AsyncClient
    fetcher: SafeFetcher
    counter: TokenCounter
    metrics: Metrics
    # Also paces each customer's model calls (the tenant's `model_calls_per_customer`).
    rate_limiter: RateLimiter
    # Signs the identity assertions of action calls (its public key: /.well-known/jwks.json).
    signer: AssertionSigner


@dataclass(frozen=True, slots=True)
class Flow:
    """The started parts of the flow that routes, the console and the CLI reach."""

    tasks: TaskOwner
    hub: WebChatHub
    fanout: RedisFanout | None
    adapters: Mapping[str, Channel]
    events: EventOutbox
    event_sender: EventSender | None
    backpressure: Backpressure
    recall: RecallCache
    forgetting: Forgetting
    knowledge: KnowledgeCache
    knowledge_forgetting: KnowledgeForgetting
    memory: MemoryWorker
    accept: Acceptor
    answer: Answerer
    deliver: Deliverer
    scheduler: TurnScheduler
    inbox: InboxProcessor
    inbox_writer: InboxWriter
    # Rows were put in the inbox outside a webhook: whoever stores them is told.
    inbox_ready: Callable[[], None]
    wakeups: Wakeups | None


class Kick:
    """A kick handed to one part before the part it kicks is built (two parts that kick each
    other: the scheduler's sweep kicks the inbox processor, which kicks the scheduler)."""

    __slots__ = ("target",)

    def __init__(self) -> None:
        self.target: Callable[[], None] | None = None

    def __call__(self) -> None:
        if self.target is not None:
            self.target()


def build_flow(resources: Resources, stack: AsyncExitStack) -> Flow:
    """Build and start the flow; each started part's `close` goes onto `stack`."""
    settings, sessions, redis, http = (
        resources.settings,
        resources.sessions,
        resources.redis,
        resources.http,
    )
    # Closed last: cancels whatever background task a part's own `close` left running.
    tasks = TaskOwner()
    stack.push_async_callback(tasks.close)
    resources.metrics.background_tasks.set_function(lambda: tasks.running)

    # Channels. With Redis, replies reach sockets held by any gateway process
    # (gateway/webchat/fanout.py).
    fanout = RedisFanout(redis, owner=tasks) if redis is not None else None
    hub = WebChatHub(fanout.publish if fanout is not None else None)
    adapters = build_adapters(AdapterDeps(settings, http, hub, resources.fetcher))
    stack.push_async_callback(close_adapters, adapters)
    stack.push_async_callback(hub.close_all)
    if fanout is not None:
        fanout.start(hub.broadcast)
        stack.push_async_callback(fanout.close)

    # Events go out from the processes that run background work; the others only record them
    # and, with Redis, wake the senders after each commit.
    # Events go through the fetcher's client: the same address checks as every other fetch
    # (a deployment posting them to a host of its own lists it in RELAYDESK_FETCH_ALLOW).
    event_sender = sender_for(
        settings, sessions, resources.fetcher.client, resources.metrics, owner=tasks
    )
    event_wakeups = (
        EventWakeups(redis, owner=tasks)
        if redis is not None and settings.events_url is not None
        else None
    )
    wake: Callable[[], None] | None = None
    if event_sender is not None:
        wake = event_sender.wake
    elif event_wakeups is not None:
        wake = event_wakeups.publish
    events = EventOutbox(enabled=settings.events_url is not None, wake=wake)

    # Hybrid ranking on a reply's path: the message's vector against the stored ones.
    queries = query_embedder_for(settings, http)
    similarity = HybridSimilarity(queries, queries.name) if queries is not None else None
    if queries is not None:
        stack.push_async_callback(queries.close)
    # Memory: recall, its forgetting across processes, and compaction.
    recall = RecallCache(similarity=RecallVectors(similarity) if similarity else None)
    forgetting = Forgetting(recall, redis, owner=tasks)
    forgetting.listen()
    stack.push_async_callback(forgetting.close)
    # The knowledge base's chunks, dropped when any process replaces or deletes a document.
    knowledge = KnowledgeCache(similarity=KnowledgeSimilarity(similarity) if similarity else None)
    knowledge_forgetting = KnowledgeForgetting(redis, owner=tasks)
    knowledge_forgetting.on_forget(knowledge.drop)
    knowledge_forgetting.listen()
    stack.push_async_callback(knowledge_forgetting.close)
    # A settings change made by any process: this one's cached settings forgotten at once.
    if redis is not None:
        settings_changes = SettingsListener(redis, owner=tasks)
        settings_changes.listen()
        stack.push_async_callback(settings_changes.close)
    queue: CompactionQueue = (
        compaction_queue(redis, settings) if redis is not None else InProcessQueue()
    )
    compactor_for = llm_compactor_factory(
        http, base_url=settings.model_base_url, api_key=secret(settings.model_api_key)
    )
    memory = MemoryWorker(sessions, resources.counter, queue, compactor_for, owner=tasks)
    if settings.run_compaction and settings.run_background:
        memory.start()
    stack.push_async_callback(memory.close)

    # Accept, deliver, answer.
    backpressure = Backpressure()
    tenant_cache = SettingsCache()
    accept = Acceptor(
        sessions=sessions,
        writer=LotWriter(
            settings=settings,
            counter=resources.counter,
            evidence={entry.name: entry.evidence for entry in CATALOG},
            tenant_cache=tenant_cache,
            events=events,
            metrics=resources.metrics,
        ),
        backpressure=backpressure,
        metrics=resources.metrics,
        seen=SeenKeys(redis) if redis is not None else None,
        memory=queue,
    )
    # One conversation at a time: its turns answered, and its replies sent, under one lock.
    locks = RedisLocks(redis) if redis is not None else InProcessLocks()
    deliver = Deliverer(
        sessions=sessions,
        adapters=adapters,
        windows=ServiceWindows(sessions, tenant_cache),
        locks=locks,
        owner=tasks,
    )
    stack.push_async_callback(deliver.close)
    gate = ModelGate(
        process_limit=settings.model_concurrency,
        provider_limits=CallLimits(
            in_flight=settings.model_max_in_flight, per_minute=settings.model_requests_per_minute
        ),
    )
    answer_deps = AnswerDeps.of(
        sessions=sessions,
        counter=resources.counter,
        tenant_cache=tenant_cache,
        adapters=adapters,
        gate=gate,
        events=events,
    )
    answer = Answerer(
        answer_deps,
        AnswerSteps.build(
            answer_deps,
            providers=providers_for(settings, http, resources.counter),
            recall_cache=recall,
            knowledge=knowledge,
            memory=queue,
            transcriber=transcriber_for(settings, http),
            message_facts_for=compactor_for,
            owner=tasks,
            actions=ActionRunner(
                resources.fetcher,
                resources.signer,
                os.environ,
                resources.counter,
                mcp=McpActions(resources.fetcher, os.environ),
            ),
            state=StateSource(resources.fetcher, resources.signer, os.environ),
            metrics=resources.metrics,
            codes=CodeSender(
                sessions,
                adapters,
                limiter=resources.rate_limiter,
                metrics=resources.metrics,
                region=settings.default_region,
            ),
        ),
        locks=locks,
        backpressure=backpressure,
        deliverer=deliver,
        pacing=ModelPacing(resources.rate_limiter),
    )

    # The scheduler and the inbox. A gateway process that only acknowledges (settings make
    # sure it has Redis) wakes the background process instead of storing and answering itself.
    wakeups = Wakeups(redis, owner=tasks) if redis is not None else None
    hand_off = None if settings.run_background else wakeups
    sweep_inbox = Kick()
    scheduler = TurnScheduler(
        answer.drain,
        answer.pending_conversations,
        redeliver=deliver.retry_deliveries,
        max_active=settings.model_concurrency,
        hand_off=hand_off.turn if hand_off is not None else None,
        intake=sweep_inbox,
        owner=tasks,
    )
    scheduler.start()
    stack.push_async_callback(scheduler.close)

    async def accept_in_background(message: InboundMessage, tenant: TenantRef) -> Accepted:
        return await accept.accept(message, tenant=tenant, background=True)

    processor = InboxProcessor(
        sessions,
        accept_in_background,
        stored=scheduler.kick,
        pause=backpressure.yield_to_ingest,
        lease=timedelta(seconds=settings.inbox_lease_s),
        owner=tasks,
    )
    sweep_inbox.target = processor.kick
    stack.push_async_callback(processor.close)
    if wakeups is not None:
        if hand_off is None:
            wakeups.listen(inbox=processor.kick, turn=scheduler.kick, inbox_idle=processor.idle)
        stack.push_async_callback(wakeups.close)
    inbox_ready = hand_off.inbox if hand_off is not None else processor.kick
    writer = InboxWriter(sessions, committed=inbox_ready, owner=tasks)
    stack.push_async_callback(writer.close)

    # Outbound events, then retention: the first to stop.
    if event_sender is not None:
        if event_wakeups is not None:
            event_wakeups.listen(event_sender.wake)
        event_sender.start()
        stack.push_async_callback(event_sender.close)
    if event_wakeups is not None:
        stack.push_async_callback(event_wakeups.close)
    # Retention runs where the rest of the background work does (not in gateway processes
    # that only acknowledge); two such processes running it at once delete each row once.
    if settings.run_background:
        retention = RetentionSweeper(
            sessions,
            interval_s=settings.retention_interval_s,
            metrics=resources.metrics,
            owner=tasks,
        )
        retention.start()
        stack.push_async_callback(retention.close)
        # The satisfaction question after an idle close, where the rest of background work runs.
        idle_surveys = IdleSurveys(Asker(sessions, resources.counter, events, deliver), owner=tasks)
        idle_surveys.start()
        stack.push_async_callback(idle_surveys.close)
        # Vectors for the rows recall and the knowledge base rank, never on a reply's path.
        embedder = embedder_for(settings, http)
        if embedder is not None:
            stack.push_async_callback(embedder.close)
            vectors = BackgroundEmbedder(
                sessions, embedder, batch=settings.embeddings_batch, owner=tasks
            )
            vectors.start()
            stack.push_async_callback(vectors.close)
        # Knowledge documents at a URL, read again when stale (through the safe fetcher).
        if settings.knowledge_resync_s > 0:
            resync = BackgroundResync(
                KnowledgeSync(
                    sessions, resources.fetcher, knowledge_forgetting.announce, resources.counter
                ),
                resync_s=settings.knowledge_resync_s,
                owner=tasks,
            )
            resync.start()
            stack.push_async_callback(resync.close)

    return Flow(
        tasks=tasks,
        hub=hub,
        fanout=fanout,
        adapters=adapters,
        events=events,
        event_sender=event_sender,
        backpressure=backpressure,
        recall=recall,
        forgetting=forgetting,
        knowledge=knowledge,
        knowledge_forgetting=knowledge_forgetting,
        memory=memory,
        accept=accept,
        answer=answer,
        deliver=deliver,
        scheduler=scheduler,
        inbox=processor,
        inbox_writer=writer,
        inbox_ready=inbox_ready,
        wakeups=wakeups,
    )
