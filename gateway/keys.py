"""Typed keys under which the app keeps its resources (built in `cleanup_ctx`, never at import)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from aiohttp import web
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.config import Settings
from gateway.coordination.wakeups import Wakeups
from gateway.inbox.processor import InboxProcessor
from gateway.inbox.writer import InboxWriter
from gateway.memory.worker import MemoryWorker
from gateway.runtime.metrics import Metrics
from gateway.turns.pipeline import Pipeline
from gateway.turns.scheduler import TurnScheduler
from gateway.webchat.hub import WebChatHub

SETTINGS = web.AppKey("settings", Settings)
METRICS = web.AppKey("metrics", Metrics)
ENGINE = web.AppKey("engine", AsyncEngine)
SESSIONS = web.AppKey("sessions", async_sessionmaker[AsyncSession])
REDIS = web.AppKey("redis", Redis)
HTTP = web.AppKey("http", httpx.AsyncClient)
COUNTER = web.AppKey("counter", TokenCounter)
PIPELINE = web.AppKey("pipeline", Pipeline)
SCHEDULER = web.AppKey("scheduler", TurnScheduler)
HUB = web.AppKey("hub", WebChatHub)
MEMORY = web.AppKey("memory", MemoryWorker)
INBOX_WRITER = web.AppKey("inbox_writer", InboxWriter)
INBOX = web.AppKey("inbox", InboxProcessor)
WAKEUPS = web.AppKey("wakeups", Wakeups)
# Rows were put in the inbox outside a webhook (a console retry): whoever stores them is told.
INBOX_READY: web.AppKey[Callable[[], None]] = web.AppKey("inbox_ready")
