"""Each process's cache of the knowledge chunks its windows draw from.

A window reads the chunks of the tenant's documents a customer's link level may be told
(`identity.audience.audiences_for`), at most `MAX_CHUNKS`, newest documents first. Reading and
indexing them on every turn would cost a statement and the stemming of every chunk, so they are
kept indexed (`context.knowledge_index`) per tenant and audience set, read again once
`STALE_AFTER` seconds old (a document added elsewhere shows up within that; unchanged chunks
keep their index), and dropped at once when a document is replaced or deleted: `drop` is
registered with `KnowledgeForgetting.on_forget`, which every process's listener calls.
A read that began before a drop is not kept, so a deleted document cannot come back from it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from sqlalchemy.ext.asyncio import AsyncSession

from context.inputs import KnowledgeItem
from context.knowledge import chunk_terms
from context.knowledge_index import KnowledgeIndex, build_knowledge_index
from gateway.embeddings.similarity import KnowledgeSimilarity
from gateway.knowledge.forgetting import DocumentsForgotten
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import StoredChunk
from gateway.tenant_ref import TenantRef
from identity.audience import Audience, audiences_for
from identity.levels import LinkLevel

__all__ = ["MAX_CHUNKS", "MAX_ENTRIES", "STALE_AFTER", "KnowledgeCache", "TenantKnowledge"]

# Seconds a read of a tenant's chunks serves before it is read again.
STALE_AFTER: Final = 60.0
# Most chunks a window draws from: a help center of a few hundred articles.
MAX_CHUNKS: Final = 2_000
# Most (tenant, audience set) entries kept; the least recently used goes first.
MAX_ENTRIES: Final = 256

_Key = tuple[str, frozenset[Audience]]


@dataclass(frozen=True, slots=True)
class _Entry:
    read_at: float
    index: KnowledgeIndex


def knowledge_item(chunk: StoredChunk, terms: tuple[str, ...] | None = None) -> KnowledgeItem:
    """A stored chunk as the window reads it, with the terms it is matched by."""
    return KnowledgeItem(
        id=str(chunk.id),
        document_id=chunk.document_id,
        title=chunk.title,
        text=chunk.text,
        updated_at=chunk.updated_at.date(),
        url=chunk.source_url,
        position=chunk.position,
        tokens=chunk.token_count,
        terms=terms or chunk_terms(chunk.title, chunk.headings, chunk.text),
    )


def _same_chunks(index: KnowledgeIndex, stored: Sequence[StoredChunk]) -> bool:
    """Whether ``stored`` are the chunks ``index`` holds, dates included (a chunk's id changes
    when its document is replaced; an unchanged document re-synced may move its date)."""
    return len(index.items) == len(stored) and all(
        item.id == str(chunk.id) and item.updated_at == chunk.updated_at.date()
        for item, chunk in zip(index.items, stored, strict=True)
    )


class KnowledgeCache:
    """The chunks each (tenant, audience set) may be told, as last read."""

    def __init__(
        self,
        *,
        stale_after: float = STALE_AFTER,
        max_entries: int = MAX_ENTRIES,
        max_chunks: int = MAX_CHUNKS,
        clock: Callable[[], float] = time.monotonic,
        similarity: KnowledgeSimilarity | None = None,
    ) -> None:
        self.similarity = similarity  # with it, chunks are also ranked by meaning
        self._stale_after = stale_after
        self._max_entries = max_entries
        self._max_chunks = max_chunks
        self._clock = clock
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        # Bumped by each drop of a tenant: a read that began before it is not kept.
        self._generations: dict[str, int] = {}

    def of(self, tenant: TenantRef) -> TenantKnowledge:
        """This cache seen from one tenant's windows. Documents are added through a host
        (`gateway.api.knowledge`): every assistant of the host reads its knowledge base."""
        return TenantKnowledge(self, replace(tenant, assistant_id=None).encode())

    async def index(self, session: AsyncSession, tenant: str, level: LinkLevel) -> KnowledgeIndex:
        """The tenant's chunks a customer linked at ``level`` may be told, indexed."""
        audiences = audiences_for(level)
        key = (tenant, audiences)
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None and now - entry.read_at < self._stale_after:
            self._entries.move_to_end(key)
            return entry.index
        generation = self._generations.get(tenant, 0)
        stored = await knowledge.visible_chunks(session, tenant, audiences, limit=self._max_chunks)
        if entry is not None and _same_chunks(entry.index, stored):
            index = entry.index  # nothing changed: the index stands
        else:
            # A chunk read again keeps the terms worked out for it (a replaced one has a new id).
            known = {item.id: item.terms for item in entry.index.items} if entry else {}
            items = tuple(knowledge_item(chunk, known.get(str(chunk.id))) for chunk in stored)
            index = build_knowledge_index(items, [item.terms for item in items])
        if self._generations.get(tenant, 0) == generation:
            self._entries[key] = _Entry(now, index)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
        return index

    def drop(self, forgotten: DocumentsForgotten) -> None:
        """Forget every entry of the tenant whose documents were replaced or deleted."""
        self._generations[forgotten.tenant] = self._generations.get(forgotten.tenant, 0) + 1
        if self.similarity is not None:
            self.similarity.forget(forgotten.tenant)
        for key in [key for key in self._entries if key[0] == forgotten.tenant]:
            del self._entries[key]


@dataclass(frozen=True, slots=True)
class TenantKnowledge:
    """Where one tenant's windows read their knowledge chunks from."""

    cache: KnowledgeCache
    tenant: str

    async def index(self, session: AsyncSession, level: LinkLevel) -> KnowledgeIndex:
        return await self.cache.index(session, self.tenant, level)

    async def similarities(
        self, session: AsyncSession, message: str, items: Sequence[KnowledgeItem]
    ) -> tuple[float | None, ...] | None:
        """The cosine of ``message`` with each of ``items`` (None: no vector yet); None when
        the cache ranks lexically only or no chunk has a vector."""
        similarity = self.cache.similarity
        if similarity is None:
            return None
        return await similarity(session, self.tenant, message, items)
