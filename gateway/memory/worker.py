"""Compaction workers: consume jobs and apply them with the tenant's settings.

``compactor_for`` builds the tenant's model compactor from its settings (``summary_model``;
see ``llm_compactor.llm_compactor_factory``); without one, or when it returns None, the offline
compactor runs. A summary model that cannot be built is logged and the offline compactor runs.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.memory.llm_compactor import CompactorFactory, LLMCompactor
from gateway.memory.owed_summaries import SWEEP_EVERY_S, sweep_forever
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.memory.service import CompactionOutcome, compact_episode
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.repositories import episodes, tenants
from gateway.tenants import TenantSettings

log = logging.getLogger("relaydesk.memory")


class MemoryWorker:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        queue: CompactionQueue,
        compactor_for: CompactorFactory | None = None,
        *,
        owner: TaskOwner | None = None,
    ) -> None:
        self.sessions = sessions
        self._owner = owner if owner is not None else TaskOwner()
        self.counter = counter
        self.queue = queue
        self.compactor_for = compactor_for
        self._tasks: list[asyncio.Task[None]] = []

    async def handle(self, job: CompactionJob) -> CompactionOutcome:
        async with self.sessions() as session:
            episode = await episodes.get_episode(session, job.customer_id, job.episode_id)
            # The tenant the episode's messages came through, as accepting stored it.
            settings = await tenants.settings_for(session, episode.tenant, channel=episode.channel)
        outcome = await compact_episode(
            self.sessions,
            job,
            settings=settings,
            counter=self.counter,
            compactor=self._compactor(settings),
        )
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

    def _compactor(self, settings: TenantSettings) -> LLMCompactor | None:
        if self.compactor_for is None:
            return None
        try:
            return self.compactor_for(settings)
        except ValueError as error:  # ProviderConfigError: an unusable summary model
            log.warning(
                "summary model unusable, offline compaction",
                extra={"fields": {"summary_model": settings.summary_model, "error": str(error)}},
            )
            return None

    async def _consume(self, job: CompactionJob) -> None:
        await self.handle(job)

    def start(self, count: int = 1, *, owed_sweep_every_s: float | None = SWEEP_EVERY_S) -> None:
        """`count` consumers, and (unless None) a periodic sweep queueing closed episodes
        still owed their final summary (see `owed_summaries`)."""
        for index in range(count):
            self._tasks.append(
                self._owner.spawn(self.queue.run(self._consume), name=f"compactor-{index}")
            )
        if owed_sweep_every_s is not None:
            sweep = sweep_forever(self.sessions, self.queue, every_s=owed_sweep_every_s)
            self._tasks.append(self._owner.spawn(sweep, name="owed-summaries"))

    async def close(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
