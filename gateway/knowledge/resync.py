"""The scheduled re-sync: URL documents read again once their last read is older than
`RELAYDESK_KNOWLEDGE_RESYNC_S`, by the processes that run background work.

The loop wakes a while after start, then every quarter of the re-sync age (at most
`MAX_WAKE_EVERY_S`), with jitter so processes started together do not fetch together. Each
wake re-syncs the stale documents, the longest unread first, in batches, through
`KnowledgeSync` (conditional fetches: a page that did not change costs a 304). A document whose
re-sync failed keeps its error and its old chunks and is not tried again by this process until
one re-sync age has passed, so a page that is down is not fetched at every wake.

One background process at a time re-syncs (`knowledge_sync.sole_syncer`: an advisory lock on
PostgreSQL, taken when it wakes and let go when nothing stale is left), as one embeds.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.knowledge.sync import KnowledgeSync, Synced
from gateway.runtime.clock import utcnow
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.repositories.knowledge_sync import sole_syncer, stale_url_documents

__all__ = ["BackgroundResync"]

log = logging.getLogger("relaydesk.knowledge")
# Its own generator for the jitter, as the embedder's.
_JITTER = random.Random()

# The first wake waits this long after start: a restarting process does not fetch at once.
FIRST_RUN_AFTER_S: Final = 60.0
MAX_WAKE_EVERY_S: Final = 900.0
# Documents read again per transaction of reads (each is fetched and stored on its own).
BATCH: Final = 20
FAILED_WAKE_S: Final = 60.0


class BackgroundResync:
    """The loop described in the module docstring."""

    def __init__(
        self,
        sync: KnowledgeSync,
        *,
        resync_s: float,
        first_run_after_s: float = FIRST_RUN_AFTER_S,
        batch: int = BATCH,
        owner: TaskOwner | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if resync_s <= 0:
            raise ValueError("documents are re-synced after a positive age")
        engine = sync.sessions.kw.get("bind")
        if not isinstance(engine, AsyncEngine):
            raise TypeError("the re-sync needs sessions bound to an engine")
        self._sync = sync
        self._engine = engine
        self._resync_s = resync_s
        self._first_run_after_s = first_run_after_s
        self._batch = batch
        self._owner = owner if owner is not None else TaskOwner()
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        # Documents whose re-sync failed, and when this process may try each again.
        self._failed_until: dict[str, float] = {}

    def start(self) -> None:
        self._task = self._owner.spawn(self._run(), name="knowledge-resync")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])

    @property
    def wake_every_s(self) -> float:
        return min(MAX_WAKE_EVERY_S, self._resync_s / 4)

    async def step(self) -> list[Synced]:
        """Re-sync every document stale now (but those that failed lately); what each did."""
        now = self._clock()
        self._failed_until = {k: t for k, t in self._failed_until.items() if t > now}
        synced_before = utcnow() - timedelta(seconds=self._resync_s)
        # Each document once a pass, whatever its re-sync did (so the pass always ends).
        seen: set[str] = set(self._failed_until)
        done: list[Synced] = []
        while True:
            async with self._sync.sessions() as session:
                stale = await stale_url_documents(
                    session, synced_before=synced_before, limit=self._batch, skip=seen
                )
            if not stale:
                return done
            seen.update(document.id for document in stale)
            for synced in await self._sync.sync_documents(stale):
                done.append(synced)
                if synced.outcome == "failed" and synced.document is not None:
                    self._failed_until[synced.document.id] = self._clock() + self._resync_s

    async def _run(self) -> None:
        await asyncio.sleep(self._first_run_after_s)
        while True:
            wait = self.wake_every_s
            try:
                async with sole_syncer(self._engine) as mine:
                    if mine:
                        self._report(await self.step())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                fields = {"error": type(exc).__name__}
                if is_storage_down(exc):
                    log.warning(
                        "knowledge re-sync postponed, storage is unavailable",
                        extra={"fields": fields},
                    )
                else:
                    log.exception("knowledge re-sync failed", extra={"fields": fields})
                wait = min(wait, FAILED_WAKE_S)
            await asyncio.sleep(wait * _JITTER.uniform(0.75, 1.25))

    def _report(self, done: list[Synced]) -> None:
        if not done:
            return
        counts: dict[str, int] = {}
        for synced in done:
            counts[synced.outcome] = counts.get(synced.outcome, 0) + 1
        log.info("knowledge documents re-synced", extra={"fields": counts})
