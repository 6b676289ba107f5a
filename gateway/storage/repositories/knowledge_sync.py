"""What the scheduled re-sync of URL documents reads: the documents last read too long ago, and
the lock that lets one process at a time re-sync them.

On PostgreSQL `sole_syncer` is a session-level advisory lock (per schema), as the embedder's
(`embeddings.sole_embedder`): held on a connection of its own while a process works through
the stale documents, so two background processes never fetch the same pages; it goes with the
connection if the process dies. SQLite serves one process.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractAsyncContextManager
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from gateway.storage.models_knowledge import KnowledgeDocument
from gateway.storage.repositories.bound_lists import as_arrays, not_one_of
from gateway.storage.repositories.knowledge import DocumentRecord, get_document
from gateway.storage.repositories.sole_worker import sole_worker

__all__ = ["sole_syncer", "stale_url_documents"]


async def stale_url_documents(
    session: AsyncSession,
    *,
    synced_before: datetime,
    limit: int,
    skip: Collection[str] = (),
) -> list[DocumentRecord]:
    """Every tenant's documents fetched from a URL and last read before `synced_before`, the
    longest unread first, at most `limit`, none of `skip`."""
    # The skipped ids as one bound list: the same statement however many there are.
    skipped = not_one_of(KnowledgeDocument.__table__.c.id, "skip", arrays=as_arrays(session))
    query = (
        select(KnowledgeDocument.tenant, KnowledgeDocument.id)
        .where(
            KnowledgeDocument.source_url.is_not(None),
            KnowledgeDocument.synced_at < synced_before,
            skipped,
        )
        .order_by(KnowledgeDocument.synced_at, KnowledgeDocument.id)
        .limit(limit)
    )
    result = await session.execute(query, {"skip": sorted(skip)})
    found = [await get_document(session, tenant, document_id) for tenant, document_id in result]
    return [document for document in found if document is not None]


def sole_syncer(engine: AsyncEngine) -> AbstractAsyncContextManager[bool]:
    """Whether this process is the one that re-syncs, for the block (`sole_worker`)."""
    return sole_worker(engine, "relaydesk.knowledge_sync")
