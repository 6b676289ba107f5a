"""Typed keys under which the app keeps its resources (built in `cleanup_ctx`, never at import;
the message flow's parts come from `gateway.flow.Flow`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx
from aiohttp import web
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from channels.base import Channel
from context import TokenCounter
from gateway.config import Settings
from gateway.coordination.wakeups import Wakeups
from gateway.customers.forgetting import Forgetting
from gateway.events.outbox import EventOutbox
from gateway.inbox.processor import InboxProcessor
from gateway.inbox.writer import InboxWriter
from gateway.knowledge.cache import KnowledgeCache
from gateway.memory.recall import RecallCache
from gateway.memory.worker import MemoryWorker
from gateway.rate_limits.limiter import RateLimiter
from gateway.runtime.metrics import Metrics
from gateway.runtime.tasks import TaskOwner
from gateway.turns.accept import Acceptor
from gateway.turns.answer import Answerer
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
from gateway.turns.scheduler import TurnScheduler
from gateway.webchat.hub import WebChatHub
from outbound import SafeFetcher

SETTINGS = web.AppKey("settings", Settings)
METRICS = web.AppKey("metrics", Metrics)
ENGINE = web.AppKey("engine", AsyncEngine)
SESSIONS = web.AppKey("sessions", async_sessionmaker[AsyncSession])
REDIS = web.AppKey("redis", Redis)
HTTP = web.AppKey("http", httpx.AsyncClient)
# Fetches of URLs the deployment's operator did not choose (`outbound`), on a client of their own.
FETCHER = web.AppKey("fetcher", SafeFetcher)
COUNTER = web.AppKey("counter", TokenCounter)
# The one owner of the message flow's background tasks (`gateway.flow`).
TASKS = web.AppKey("tasks", TaskOwner)
# The message flow: accept → (inbox) → answer → deliver, each with only what it uses.
ACCEPT = web.AppKey("accept", Acceptor)
ANSWER = web.AppKey("answer", Answerer)
DELIVER = web.AppKey("deliver", Deliverer)
BACKPRESSURE = web.AppKey("backpressure", Backpressure)
RECALL = web.AppKey("recall", RecallCache)
KNOWLEDGE = web.AppKey("knowledge", KnowledgeCache)
# Erasures make every process forget the erased customers' recall entries.
FORGETTING = web.AppKey("forgetting", Forgetting)
# The adapters of the registered channels, by channel name (`gateway.registry`).
ADAPTERS: web.AppKey[Mapping[str, Channel]] = web.AppKey("adapters")
SCHEDULER = web.AppKey("scheduler", TurnScheduler)
HUB = web.AppKey("hub", WebChatHub)
MEMORY = web.AppKey("memory", MemoryWorker)
# Events for RELAYDESK_EVENTS_URL, recorded in the transaction of the change they announce.
EVENTS = web.AppKey("events", EventOutbox)
INBOX_WRITER = web.AppKey("inbox_writer", InboxWriter)
INBOX = web.AppKey("inbox", InboxProcessor)
WAKEUPS = web.AppKey("wakeups", Wakeups)
# The rate limits of the public doors and of customers' model calls (`gateway.rate_limits`).
RATE_LIMITER = web.AppKey("rate_limiter", RateLimiter)
# Rows were put in the inbox outside a webhook (a console retry): whoever stores them is told.
INBOX_READY: web.AppKey[Callable[[], None]] = web.AppKey("inbox_ready")
