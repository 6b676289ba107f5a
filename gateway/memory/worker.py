"""Compaction workers: consume jobs and apply them with the tenant's settings."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.memory.service import CompactionOutcome, compact_episode
from gateway.storage.repositories import episodes, tenants
from gateway.tenants import effective_settings

log = logging.getLogger("relaydesk.memory")

DEFAULT_DOMAIN = "default"


class MemoryWorker:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        queue: CompactionQueue,
    ) -> None:
        self.sessions = sessions
        self.counter = counter
        self.queue = queue
        self._tasks: list[asyncio.Task[None]] = []

    async def handle(self, job: CompactionJob) -> CompactionOutcome:
        async with self.sessions() as session:
            episode = await episodes.get_episode(session, job.customer_id, job.episode_id)
            layers = await tenants.settings_layers(session, domain=DEFAULT_DOMAIN)
        settings = effective_settings(layers, channel=episode.channel)
        outcome = await compact_episode(self.sessions, job, settings=settings, counter=self.counter)
        if outcome.compacted:
            log.info(
                "episode compacted",
                extra={
                    "fields": {
                        "episode": job.episode_id,
                        "messages": outcome.compacted,
                        "facts": outcome.facts_written,
                    }
                },
            )
        return outcome

    async def _consume(self, job: CompactionJob) -> None:
        await self.handle(job)

    def start(self, count: int = 1) -> None:
        for index in range(count):
            self._tasks.append(
                asyncio.create_task(self.queue.run(self._consume), name=f"compactor-{index}")
            )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
