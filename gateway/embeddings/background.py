"""Vectors computed in the background: the rows recall and the knowledge base rank, embedded
in batches by the processes that run background work, never on a reply's path.

Each pass reads the oldest rows without a vector of the embedder's model (messages, then
knowledge chunks) from a cursor per kind, embeds them as passages and stores the vectors in
one short transaction; the read and the write are separate transactions, so no lock is held
while the model works. A call's turns are masked for identifiers first, as recall masks them.
While rows remain the passes follow each other; when none do, the loop pauses (`idle_s`, with
jitter).

Ids are handed out before their transactions commit, so a row may appear behind the cursor
after a newer one was embedded: each read starts `LOOK_BACK` ids behind the cursor (a few
index probes on rows that have their vector), and once every `full_pass_every_s` the cursor
goes back to the first row, which also gives a skipped row another try. The full pass is the
one read that walks the whole table (about a quarter of a second per 100,000 messages on
PostgreSQL), hence not more often.

A provider that fails (`EmbeddingFailed`) or storage that is down is logged and retried with
a backoff doubling up to `MAX_BACKOFF_S`; after `SHRINK_AFTER` failures in a row the batch is
halved each time, so a row the provider refuses for itself ends up alone and is skipped
(until the next full pass) instead of holding back everything after it.

One background process at a time works (`embeddings.sole_embedder`: an advisory lock on
PostgreSQL, taken when it wakes and let go when nothing is left or a pass fails), so two
processes never compute the same rows, and on a small machine embedding takes one core, not
one per process. A claim per row (``SKIP LOCKED`` on the messages) would hold locks that
erasure and retention wait on for as long as the model works, or need a table of claims
written per row. Should two processes still store the same row, the insert keeps the first
vector (``ON CONFLICT DO NOTHING``).

Each burst of work ends with one log line: rows embedded, seconds, rows per second.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from context.compaction.identifiers import mask_identifiers
from gateway.embeddings.base import Embedder, EmbeddingFailed
from gateway.embeddings.vectors import to_float32
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.models_embeddings import SubjectKind
from gateway.storage.repositories import embeddings
from gateway.storage.repositories.embeddings import NewVector, PendingText

__all__ = ["BackgroundEmbedder", "Burst"]

log = logging.getLogger("relaydesk.embeddings")
# Its own generator for the jitter, so the loop never moves the process's shared one while
# another thread draws from it.
_JITTER = random.Random()

BATCH: Final = 64
# The first pass waits this long after start: a process restarting often still embeds, just
# not while it is starting.
FIRST_RUN_AFTER_S: Final = 30.0
IDLE_S: Final = 5.0
LOOK_BACK: Final = 1_000
FULL_PASS_EVERY_S: Final = 3_600.0
FIRST_BACKOFF_S: Final = 5.0
MAX_BACKOFF_S: Final = 300.0
SHRINK_AFTER: Final = 3
# A longer text is cut: small embedding models read ~512 tokens, and a request with one huge
# input could fail its whole batch.
MAX_CHARS: Final = 4_000
# While a long backlog is worked through, one progress line at most this often.
REPORT_EVERY_S: Final = 60.0

_Pending = Callable[..., Awaitable[list[PendingText]]]
_PENDING: Final[dict[SubjectKind, _Pending]] = {
    "message": embeddings.pending_messages,
    "knowledge_chunk": embeddings.pending_chunks,
}


@dataclass(frozen=True, slots=True)
class Burst:
    """Rows embedded since the loop last went idle, and how long it took."""

    rows: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def _text(row: PendingText) -> str:
    text = mask_identifiers(row.text) if row.transcript else row.text
    return text[:MAX_CHARS]


class BackgroundEmbedder:
    """The loop described in the module docstring, for one `Embedder`."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        embedder: Embedder,
        *,
        batch: int = BATCH,
        first_run_after_s: float = FIRST_RUN_AFTER_S,
        idle_s: float = IDLE_S,
        full_pass_every_s: float = FULL_PASS_EVERY_S,
        first_backoff_s: float = FIRST_BACKOFF_S,
        start_after: Mapping[SubjectKind, int] | None = None,
        owner: TaskOwner | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if batch < 1:
            raise ValueError("a batch holds at least one row")
        engine = sessions.kw.get("bind")
        if not isinstance(engine, AsyncEngine):
            raise TypeError("the background embedder needs sessions bound to an engine")
        self._sessions = sessions
        self._engine = engine
        self._embedder = embedder
        self._batch = batch
        self._first_run_after_s = first_run_after_s
        self._idle_s = idle_s
        self._full_pass_every_s = full_pass_every_s
        self._first_backoff_s = first_backoff_s
        self._owner = owner if owner is not None else TaskOwner()
        self._clock = clock
        self._task: asyncio.Task[None] | None = None
        # Where each kind's cursor starts, and how far back a read may look until the first
        # full pass (a caller that knows the rows before are done).
        self._floor: dict[SubjectKind, int] = {
            kind: (start_after or {}).get(kind, 0) for kind in _PENDING
        }
        self._after = dict(self._floor)
        self._skipped: dict[SubjectKind, set[int]] = {kind: set() for kind in _PENDING}
        self._failures = 0
        self._full_pass_at = clock()
        self.embedded = 0  # rows stored by this process, for tests and the progress line

    def start(self) -> None:
        self._task = self._owner.spawn(self._run(), name="embeddings")

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])

    @property
    def batch(self) -> int:
        """This pass's batch: halved per failure past `SHRINK_AFTER` in a row, down to one."""
        shrink = max(0, self._failures - SHRINK_AFTER + 1)
        return max(1, self._batch >> shrink)

    async def step(self) -> int | None:
        """One batch of the first kind with rows left: the rows stored, or None when no kind
        has any. Raises what the provider or storage raised; the cursor then stays put."""
        if self._clock() - self._full_pass_at >= self._full_pass_every_s:
            self._floor = dict.fromkeys(self._floor, 0)
            self._after = dict.fromkeys(self._after, 0)
            self._skipped = {kind: set() for kind in self._skipped}
            self._full_pass_at = self._clock()
        model = self._embedder.name
        for kind, pending in _PENDING.items():
            start = max(self._floor[kind], self._after[kind] - LOOK_BACK)
            async with self._sessions() as session:
                rows = await pending(
                    session, model, after=start, limit=self.batch, skip=self._skipped[kind]
                )
            if not rows:
                continue
            try:
                stored = await self._embed(rows, model)
            except EmbeddingFailed:
                if len(rows) == 1 and self._failures >= SHRINK_AFTER:
                    # Alone and still refused: skipped until the next full pass.
                    log.warning(
                        "a row is skipped, its embedding keeps failing",
                        extra={"fields": {"kind": kind, "subject_id": rows[0].subject_id}},
                    )
                    self._skipped[kind].add(rows[0].subject_id)
                raise
            self._after[kind] = max(self._after[kind], rows[-1].subject_id)
            self._failures = 0
            return stored
        return None

    async def _embed(self, rows: list[PendingText], model: str) -> int:
        texts = [(row, _text(row)) for row in rows]
        wanted = [(row, text) for row, text in texts if text.strip()]
        for row, text in texts:
            if not text.strip():  # nothing to embed (and recall skips it too): not read again
                self._skipped[row.kind].add(row.subject_id)
        if not wanted:
            return 0
        vectors = await self._embedder.embed([text for _, text in wanted], "passage")
        new = [
            NewVector(
                kind=row.kind,
                subject_id=row.subject_id,
                tenant=row.tenant,
                customer_id=row.customer_id,
                model=model,
                vector=to_float32(vector),
                dimensions=len(vector),
            )
            for (row, _), vector in zip(wanted, vectors, strict=True)
        ]
        async with self._sessions.begin() as session:
            stored = await embeddings.store_vectors(session, new)
        self.embedded += stored
        return stored

    async def drain(self) -> Burst:
        """Passes until no row is left without a vector; what they embedded. Raises as
        `step` does."""
        started = self._clock()
        rows = 0
        while (stored := await self.step()) is not None:
            rows += stored
        return Burst(rows, self._clock() - started)

    async def _run(self) -> None:
        await asyncio.sleep(self._first_run_after_s)
        while True:
            try:
                async with embeddings.sole_embedder(self._engine) as mine:
                    if mine:
                        await self._work()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await asyncio.sleep(self._failed(exc))
                continue
            await asyncio.sleep(self._idle_s * _JITTER.uniform(0.5, 1.5))

    async def _work(self) -> None:
        """Passes until nothing is pending: a progress line a minute, one at the end."""
        rows, started, reported = 0, self._clock(), self._clock()
        try:
            while (stored := await self.step()) is not None:
                rows += stored
                if self._clock() - reported >= REPORT_EVERY_S:
                    self._report("embedding rows", rows, started)
                    reported = self._clock()
        finally:
            if rows:
                self._report("rows embedded", rows, started)

    def _failed(self, exc: Exception) -> float:
        """Log the failure; how long to wait before the next pass."""
        self._failures += 1
        backoff = min(MAX_BACKOFF_S, math.ldexp(self._first_backoff_s, self._failures - 1))
        fields = {"error": type(exc).__name__, "failures": self._failures, "retry_in_s": backoff}
        if isinstance(exc, EmbeddingFailed):
            log.warning("embedding failed, retried later", extra={"fields": fields})
        elif is_storage_down(exc):
            log.warning("embedding postponed, storage is unavailable", extra={"fields": fields})
        else:
            log.exception("embedding failed", extra={"fields": fields})
        return backoff * _JITTER.uniform(0.8, 1.2)

    def _report(self, message: str, rows: int, started: float) -> None:
        burst = Burst(rows, self._clock() - started)
        log.info(
            message,
            extra={
                "fields": {
                    "model": self._embedder.name,
                    "rows": burst.rows,
                    "seconds": round(burst.seconds, 3),
                    "rows_per_s": round(burst.rows_per_s, 1),
                }
            },
        )
