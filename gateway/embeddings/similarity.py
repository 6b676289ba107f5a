"""Hybrid ranking on a reply's path: the message's vector against the stored vectors of the
customer's history and of the tenant's knowledge base.

The stored vectors are computed in the background (`gateway.embeddings.background`); a reply
only reads them, a matrix per customer or tenant kept for ``reread_after_s`` (rows the
background adds meanwhile are picked up on the next read). The one vector a reply computes is
the message's own, and only when something it would be compared with has a vector: a customer
with no embedded history and a tenant with no embedded chunk cost nothing. That vector comes
from a query embedder of its own (the offline model at normal priority, not behind the
background's batches) within ``deadline_s``; past it the reply ranks lexically and the vector,
once computed, waits in the embedder's cache for the customer's next message. A process spends
at most a share of one CPU on those vectors (`QueryBudget`): under a load that would need more,
the replies past the budget rank lexically rather than all of them waiting longer.

A row with no vector yet, a summary sentence and a turn of a call stored as one transcript of
many turns (embedded whole, not turn by turn) get no similarity and are ranked lexically only
(`context.recall_fusion`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession

from context.inputs import KnowledgeItem
from context.recall_score import RecallCandidate
from gateway.embeddings.base import Embedder, EmbeddingFailed
from gateway.storage.repositories import embeddings
from gateway.storage.repositories.embeddings import StoredVectors

__all__ = [
    "QUERY_DEADLINE_S",
    "HybridSimilarity",
    "QueryBudget",
    "KnowledgeSimilarity",
    "RecallVectors",
    "StoredVectorShelf",
]

log = logging.getLogger("relaydesk.embeddings")

# How long a reply waits for its message's vector before ranking lexically: the offline model
# takes 30-60 ms of CPU for a message on a small machine, so this leaves room for a busy one.
QUERY_DEADLINE_S: Final = 0.5
# The longest text embedded as a question: small embedding models read ~512 tokens.
QUERY_CHARS: Final = 2_000
REREAD_AFTER_S: Final = 30.0
# At most this share of one CPU per process goes to embedding replies' messages, over
# `BUDGET_WINDOW_S`: at ~40 ms a message on a small machine, about 6 messages a second. A short
# window spends it evenly: a long one lets a burst take half a CPU for seconds.
QUERY_CPU_SHARE: Final = 0.25
BUDGET_WINDOW_S: Final = 2.0
SHELF_ENTRIES: Final = 256

Float32Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class _Shelved:
    read_at: float
    vectors: StoredVectors
    rows: dict[int, int]  # subject id → row of the matrix


class StoredVectorShelf:
    """The stored vectors last read per customer or tenant, read again once older than
    ``reread_after_s``; the least recently used entry goes first past ``capacity``."""

    def __init__(
        self,
        *,
        reread_after_s: float = REREAD_AFTER_S,
        capacity: int = SHELF_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reread_after_s = reread_after_s
        self._capacity = capacity
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Shelved] = OrderedDict()

    async def get(
        self, key: tuple[str, str], read: Callable[[], Awaitable[StoredVectors]]
    ) -> _Shelved:
        now = self._clock()
        entry = self._entries.get(key)
        if entry is None or now - entry.read_at >= self._reread_after_s:
            vectors = await read()
            rows = {subject: row for row, subject in enumerate(vectors.subject_ids)}
            entry = _Shelved(now, vectors, rows)
            self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return entry

    def forget(self, key: tuple[str, str]) -> None:
        self._entries.pop(key, None)


class QueryBudget:
    """The share of one CPU a process may spend embedding its replies' messages, over a
    sliding ``window_s``: past it, replies rank lexically until the window frees up. On a
    small machine under load the message's vector would otherwise take the CPU the replies
    themselves need (each costs tens of milliseconds), and every reply would wait longer."""

    def __init__(
        self,
        share: float = QUERY_CPU_SHARE,
        window_s: float = BUDGET_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._allowed_s = share * window_s
        self._window_s = window_s
        self._clock = clock
        self._spent: deque[tuple[float, float]] = deque()  # (ended at, seconds)
        self._total = 0.0

    @classmethod
    def unlimited(cls) -> QueryBudget:
        """No limit: for an evaluation or a benchmark, which measure the vectors themselves."""
        return cls(share=math.inf)

    def allows(self) -> bool:
        now = self._clock()
        while self._spent and now - self._spent[0][0] >= self._window_s:
            self._total -= self._spent.popleft()[1]
        return self._total < self._allowed_s

    def spend(self, seconds: float) -> None:
        self._spent.append((self._clock(), seconds))
        self._total += seconds


class HybridSimilarity:
    """The message's vector (see the module docstring) and the cosines it gives against a
    shelf's rows; shared by recall and the knowledge slice, so one reply embeds once."""

    def __init__(
        self,
        queries: Embedder,
        model: str,
        *,
        deadline_s: float = QUERY_DEADLINE_S,
        shelf: StoredVectorShelf | None = None,
        budget: QueryBudget | None = None,
    ) -> None:
        self._queries = queries
        self.model = model  # the model the stored vectors were computed with
        self._deadline_s = deadline_s
        self.shelf = shelf if shelf is not None else StoredVectorShelf()
        self._budget = budget if budget is not None else QueryBudget()
        self._pending: dict[str, asyncio.Task[Float32Vector | None]] = {}
        self.late = 0  # messages ranked lexically because their vector came too late
        self.over_budget = 0  # messages ranked lexically because the budget was spent

    async def query_vector(self, message: str) -> Float32Vector | None:
        """The message's vector, or None (the budget spent, past the deadline, or the
        embedder failed)."""
        text = message[:QUERY_CHARS]
        task = self._pending.get(text)
        if task is None:
            if not self._budget.allows():
                self.over_budget += 1
                return None
            task = asyncio.ensure_future(self._embed(text))
            self._pending[text] = task
            task.add_done_callback(lambda _: self._pending.pop(text, None))
        try:
            return await asyncio.wait_for(asyncio.shield(task), self._deadline_s)
        except TimeoutError:
            self.late += 1
            log.info(
                "message vector late, ranked lexically", extra={"fields": {"chars": len(text)}}
            )
            return None

    async def _embed(self, text: str) -> Float32Vector | None:
        started = time.perf_counter()
        try:
            (vector,) = await self._queries.embed([text], "query")
        except EmbeddingFailed as exc:
            log.warning(
                "message vector failed, ranked lexically", extra={"fields": {"error": str(exc)}}
            )
            return None
        finally:
            self._budget.spend(time.perf_counter() - started)
        return np.asarray(vector, dtype=np.float32)

    async def cosines(
        self, message: str, shelved: _Shelved, rows: Sequence[int | None]
    ) -> tuple[float | None, ...]:
        """The cosine of the message with each of ``rows`` of the shelf (None stays None);
        all None, with nothing embedded, when no row has a vector."""
        if all(row is None for row in rows):
            return tuple(None for _ in rows)
        query = await self.query_vector(message)
        matrix = shelved.vectors.matrix
        if query is None or query.shape[0] != matrix.shape[1]:
            return tuple(None for _ in rows)
        scores = matrix @ query
        return tuple(None if row is None else float(scores[row]) for row in rows)


class RecallVectors:
    """`gateway.memory.recall.RecallSimilarity` over the customer's stored message vectors."""

    def __init__(self, similarity: HybridSimilarity) -> None:
        self._similarity = similarity

    async def __call__(
        self,
        message: str,
        candidates: Sequence[RecallCandidate],
        *,
        session: AsyncSession,
        customer_id: str,
    ) -> Sequence[float | None]:
        similarity = self._similarity
        shelved = await similarity.shelf.get(
            ("customer", customer_id),
            lambda: embeddings.customer_vectors(session, customer_id, similarity.model),
        )
        # A message's vector stands for a line only when the message is that one line: a
        # typed turn, or a call stored a turn a message (a transcript of many turns is not).
        lines = Counter(c.source_message_id for c in candidates if c.kind == "turn")
        rows = [
            shelved.rows.get(candidate.source_message_id)
            if candidate.kind == "turn" and lines[candidate.source_message_id] == 1
            else None
            for candidate in candidates
        ]
        return await similarity.cosines(message, shelved, rows)


class KnowledgeSimilarity:
    """The cosine of a message with each knowledge chunk a window may hold, from the tenant's
    stored chunk vectors."""

    def __init__(self, similarity: HybridSimilarity) -> None:
        self._similarity = similarity

    async def __call__(
        self,
        session: AsyncSession,
        tenant: str,
        message: str,
        items: Sequence[KnowledgeItem],
    ) -> tuple[float | None, ...] | None:
        if not items:
            return None
        similarity = self._similarity
        shelved = await similarity.shelf.get(
            ("tenant", tenant),
            lambda: embeddings.knowledge_vectors(session, tenant, similarity.model),
        )
        rows = [shelved.rows.get(int(item.id)) if item.id.isdigit() else None for item in items]
        scores = await similarity.cosines(message, shelved, rows)
        return None if all(score is None for score in scores) else scores

    def forget(self, tenant: str) -> None:
        """A document of the tenant was replaced or deleted: its vectors are read again."""
        self._similarity.shelf.forget(("tenant", tenant))
