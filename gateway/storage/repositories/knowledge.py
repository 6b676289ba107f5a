"""A tenant's knowledge base: documents stored with their chunks, replaced whole, listed with
how they were last read, and the chunks a set of audiences may be told.

A document is stored or replaced in the caller's transaction, its chunks with it: a reader
sees the old chunks or the new ones, never a mix. A document read again from the same bytes
(same content hash, title and audience) rewrites nothing: only its sync moves.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.knowledge.records import FORMATS, DocumentFormat, ParsedDocument
from gateway.runtime.clock import utcnow
from gateway.storage.models_knowledge import TITLE_LENGTH, KnowledgeChunk, KnowledgeDocument
from gateway.storage.repositories.bound_lists import values_in
from identity.audience import Audience

# What `store_document` did: a new document, its chunks replaced, or nothing but the sync.
StoreOutcome = Literal["added", "replaced", "unchanged"]

SYNC_ERROR_LENGTH = 2000


@dataclass(frozen=True, slots=True)
class NewDocument:
    """A document read into chunks, ready to be stored for `tenant`. `token_counts`, when
    known, holds one count per chunk, in order."""

    tenant: str
    parsed: ParsedDocument
    format: DocumentFormat
    audience: Audience
    content_hash: str
    # The document's own date; None: now for new or changed content, kept for the same bytes.
    updated_at: datetime | None = None
    source_url: str | None = None
    etag: str | None = None
    last_modified: datetime | None = None
    token_counts: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.token_counts is not None and len(self.token_counts) != len(self.parsed.chunks):
            raise ValueError("token_counts needs one count per chunk")


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    id: str
    tenant: str
    title: str
    source_url: str | None
    format: DocumentFormat
    audience: Audience
    content_hash: str
    etag: str | None
    last_modified: datetime | None
    updated_at: datetime
    synced_at: datetime
    sync_error: str | None
    created_at: datetime
    chunk_count: int


@dataclass(frozen=True, slots=True)
class StoredDocument:
    document: DocumentRecord
    outcome: StoreOutcome


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as a window reads it: with its document's title, URL, date and audience."""

    id: int
    document_id: str
    position: int
    headings: tuple[str, ...]
    text: str
    audience: Audience
    token_count: int | None
    title: str
    source_url: str | None
    updated_at: datetime


def _record(row: KnowledgeDocument, chunk_count: int) -> DocumentRecord:
    return DocumentRecord(
        id=row.id,
        tenant=row.tenant,
        title=row.title,
        source_url=row.source_url,
        format=_format(row.format),
        audience=Audience(row.audience),
        content_hash=row.content_hash,
        etag=row.etag,
        last_modified=row.last_modified,
        updated_at=row.updated_at,
        synced_at=row.synced_at,
        sync_error=row.sync_error,
        created_at=row.created_at,
        chunk_count=chunk_count,
    )


def _format(stored: str) -> DocumentFormat:
    for known in FORMATS:
        if stored == known:
            return known
    raise ValueError(f"unknown document format {stored!r}")


def _chunk_rows(document_id: str, new: NewDocument) -> list[dict[str, object]]:
    counts: Sequence[int | None] = new.token_counts or [None] * len(new.parsed.chunks)
    return [
        {
            "document_id": document_id,
            "tenant": new.tenant,
            "audience": new.audience.value,
            "position": chunk.position,
            "headings": list(chunk.headings),
            "text": chunk.text,
            "token_count": count,
        }
        for chunk, count in zip(new.parsed.chunks, counts, strict=True)
    ]


async def _chunk_count(session: AsyncSession, document_id: str) -> int:
    count = await session.scalar(
        select(func.count())
        .select_from(KnowledgeChunk)
        .where(KnowledgeChunk.document_id == document_id)
    )
    return int(count or 0)


async def _existing(
    session: AsyncSession, new: NewDocument, document_id: str | None
) -> KnowledgeDocument | None:
    if document_id is not None:
        return await session.scalar(
            select(KnowledgeDocument)
            .where(KnowledgeDocument.id == document_id, KnowledgeDocument.tenant == new.tenant)
            .with_for_update()
        )
    if new.source_url is None:
        return None
    return await session.scalar(
        select(KnowledgeDocument)
        .where(
            KnowledgeDocument.tenant == new.tenant,
            KnowledgeDocument.source_url == new.source_url,
        )
        .with_for_update()
    )


def _unchanged(row: KnowledgeDocument, new: NewDocument) -> bool:
    return (
        row.content_hash == new.content_hash
        and row.title == new.parsed.title[:TITLE_LENGTH]
        and row.audience == new.audience.value
        and row.format == new.format
    )


async def store_document(
    session: AsyncSession,
    new: NewDocument,
    *,
    document_id: str | None = None,
    now: datetime | None = None,
) -> StoredDocument:
    """Add `new`, or replace the document it stands for: the one named `document_id` (in the
    same tenant; `LookupError` if there is none), else the tenant's document at the same
    source URL (`IntegrityError` when another document of the tenant has it). A replaced
    document's chunks are deleted and written again in this transaction; an unchanged one
    (same bytes, title, format and audience) keeps its chunks, and only its sync, validators
    and (when given) date move."""
    now = now or utcnow()
    row = await _existing(session, new, document_id)
    if row is None and document_id is not None:
        raise LookupError(f"no knowledge document {document_id!r}")
    if row is not None and _unchanged(row, new):
        row.synced_at = now
        row.sync_error = None
        row.etag = new.etag
        row.last_modified = new.last_modified
        row.updated_at = new.updated_at or row.updated_at
        await session.flush()
        return StoredDocument(_record(row, await _chunk_count(session, row.id)), "unchanged")
    outcome: StoreOutcome = "replaced" if row is not None else "added"
    if row is None:
        row = KnowledgeDocument(tenant=new.tenant, created_at=now)
        session.add(row)
    else:
        await session.execute(delete(KnowledgeChunk).where(KnowledgeChunk.document_id == row.id))
    row.title = new.parsed.title[:TITLE_LENGTH]
    # Replaced by id without a URL: it stays the document of the URL it had.
    row.source_url = new.source_url or row.source_url
    row.format = new.format
    row.audience = new.audience.value
    row.content_hash = new.content_hash
    row.etag = new.etag
    row.last_modified = new.last_modified
    row.updated_at = new.updated_at or now
    row.synced_at = now
    row.sync_error = None
    await session.flush()
    rows = _chunk_rows(row.id, new)
    if rows:
        await session.execute(insert(KnowledgeChunk), rows)
    return StoredDocument(_record(row, len(rows)), outcome)


async def get_document(
    session: AsyncSession, tenant: str, document_id: str
) -> DocumentRecord | None:
    row = await session.scalar(
        select(KnowledgeDocument).where(
            KnowledgeDocument.id == document_id, KnowledgeDocument.tenant == tenant
        )
    )
    if row is None:
        return None
    return _record(row, await _chunk_count(session, row.id))


async def document_by_url(
    session: AsyncSession, tenant: str, source_url: str
) -> DocumentRecord | None:
    """The tenant's document fetched from `source_url` (its validators for a re-sync)."""
    row = await session.scalar(
        select(KnowledgeDocument).where(
            KnowledgeDocument.tenant == tenant, KnowledgeDocument.source_url == source_url
        )
    )
    if row is None:
        return None
    return _record(row, await _chunk_count(session, row.id))


async def list_documents(
    session: AsyncSession, tenant: str | None, *, limit: int | None = None
) -> list[DocumentRecord]:
    """The tenant's documents (every tenant's with None), newest first, each with its chunk
    count."""
    counts = select(KnowledgeChunk.document_id, func.count().label("chunks"))
    if tenant is not None:
        counts = counts.where(KnowledgeChunk.tenant == tenant)
    counted = counts.group_by(KnowledgeChunk.document_id).subquery()
    query = (
        select(KnowledgeDocument, func.coalesce(counted.c.chunks, 0))
        .outerjoin(counted, counted.c.document_id == KnowledgeDocument.id)
        .order_by(KnowledgeDocument.created_at.desc(), KnowledgeDocument.id)
    )
    if tenant is not None:
        query = query.where(KnowledgeDocument.tenant == tenant)
    if limit is not None:
        query = query.limit(limit)
    result = await session.execute(query)
    return [_record(row, int(count)) for row, count in result.all()]


async def document_chunks(session: AsyncSession, document: DocumentRecord) -> list[StoredChunk]:
    """A document's chunks in order."""
    rows = await session.scalars(
        select(KnowledgeChunk)
        .where(KnowledgeChunk.document_id == document.id)
        .order_by(KnowledgeChunk.position)
    )
    return [_chunk(row, document.title, document.source_url, document.updated_at) for row in rows]


def _chunk(
    row: KnowledgeChunk, title: str, source_url: str | None, updated_at: datetime
) -> StoredChunk:
    return StoredChunk(
        id=row.id,
        document_id=row.document_id,
        position=row.position,
        headings=tuple(row.headings or ()),
        text=row.text,
        audience=Audience(row.audience),
        token_count=row.token_count,
        title=title,
        source_url=source_url,
        updated_at=updated_at,
    )


async def visible_chunks(
    session: AsyncSession, tenant: str, audiences: Collection[Audience], *, limit: int
) -> list[StoredChunk]:
    """At most `limit` of the tenant's chunks for one of `audiences` (a customer's link level
    gives them: `identity.audience.audiences_for`), the newest documents first, each
    document's chunks in order. No audience, no chunk."""
    if not audiences or limit <= 0:
        return []
    result = await session.execute(
        select(
            KnowledgeChunk,
            KnowledgeDocument.title,
            KnowledgeDocument.source_url,
            KnowledgeDocument.updated_at,
        )
        .join(KnowledgeDocument, KnowledgeDocument.id == KnowledgeChunk.document_id)
        .where(
            KnowledgeChunk.tenant == tenant,
            values_in(session, KnowledgeChunk.audience, sorted(a.value for a in audiences)),
        )
        .order_by(
            KnowledgeDocument.updated_at.desc(),
            KnowledgeChunk.document_id,
            KnowledgeChunk.position,
        )
        .limit(limit)
    )
    return [
        _chunk(row, title, source_url, updated_at)
        for row, title, source_url, updated_at in result.all()
    ]


async def delete_document(
    session: AsyncSession, tenant: str, document_id: str
) -> DocumentRecord | None:
    """Delete the tenant's document and its chunks; the document as it was, or None."""
    found = await get_document(session, tenant, document_id)
    if found is None:
        return None
    # The cascade would do it on PostgreSQL; said outright so it never depends on the pragma.
    await session.execute(delete(KnowledgeChunk).where(KnowledgeChunk.document_id == found.id))
    await session.execute(delete(KnowledgeDocument).where(KnowledgeDocument.id == found.id))
    return found


async def record_sync_error(
    session: AsyncSession, tenant: str, document_id: str, error: str
) -> bool:
    """Note why the document could not be read again (its chunks and last sync stay as they
    were); whether it exists."""
    result = await session.execute(
        update(KnowledgeDocument)
        .where(KnowledgeDocument.id == document_id, KnowledgeDocument.tenant == tenant)
        .values(sync_error=error[:SYNC_ERROR_LENGTH])
    )
    return bool(getattr(result, "rowcount", 0))


async def record_not_modified(
    session: AsyncSession,
    tenant: str,
    document_id: str,
    *,
    now: datetime | None = None,
    etag: str | None = None,
    last_modified: datetime | None = None,
) -> bool:
    """A re-sync the source answered "not modified": the document is current as of `now`, its
    error cleared, and a validator the answer carried kept; whether it exists."""
    values: dict[str, object] = {"synced_at": now or utcnow(), "sync_error": None}
    if etag is not None:
        values["etag"] = etag
    if last_modified is not None:
        values["last_modified"] = last_modified
    result = await session.execute(
        update(KnowledgeDocument)
        .where(KnowledgeDocument.id == document_id, KnowledgeDocument.tenant == tenant)
        .values(**values)
    )
    return bool(getattr(result, "rowcount", 0))
