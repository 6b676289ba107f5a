"""Adding and removing a tenant's knowledge documents, for the API and the command line alike:
the bytes read into chunks (off the event loop), stored with their audit entry in one
transaction, then every process told to drop what it cached of a replaced or deleted one."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context.tokens import TokenCounter
from gateway.knowledge.forgetting import DocumentsForgotten
from gateway.knowledge.parsing import parse_document
from gateway.knowledge.records import DocumentFormat, ParsedDocument
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.audit import record_audit
from gateway.storage.repositories.knowledge import DocumentRecord, NewDocument, StoredDocument
from identity.audience import Audience

# A help-center article, a manual or a price list fits; a larger file is refused, not cut.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
AUDIT_SUBJECT = "knowledge_document"
STORED_ACTION = "knowledge.document_stored"
DELETED_ACTION = "knowledge.document_deleted"

# Tells every process to drop a document's cached chunks (`KnowledgeForgetting.announce`).
Announce = Callable[[DocumentsForgotten], Awaitable[None]]


class DocumentTooLarge(ValueError):
    """The document's bytes are over `MAX_DOCUMENT_BYTES`."""


class UrlTaken(ValueError):
    """Another document of the tenant has the upload's URL (one document per URL)."""


@dataclass(frozen=True, slots=True)
class Upload:
    """A document as it arrives: its bytes in a known format, who may be told it, and what
    the caller says of it (a title overrides the document's own; `name` is a file name, the
    title of last resort)."""

    body: bytes
    format: DocumentFormat
    audience: Audience
    title: str | None = None
    source_url: str | None = None
    updated_at: datetime | None = None
    name: str | None = None
    # A fetched document's validators, sent back on its next re-sync.
    etag: str | None = None
    last_modified: datetime | None = None


def read_upload(
    upload: Upload, counter: TokenCounter | None
) -> tuple[ParsedDocument, tuple[int, ...] | None]:
    """The upload's title and chunks, and each chunk's token count when a counter is given.
    Raises `DocumentTooLarge`, or the parser's `DocumentUnreadable`."""
    if len(upload.body) > MAX_DOCUMENT_BYTES:
        raise DocumentTooLarge(
            f"document of {len(upload.body)} bytes exceeds {MAX_DOCUMENT_BYTES} bytes"
        )
    fallback = upload.title or upload.name or upload.source_url or "Untitled"
    parsed = parse_document(upload.body, upload.format, fallback_title=fallback)
    if upload.title:
        parsed = replace(parsed, title=upload.title)
    counts = None if counter is None else tuple(counter.count(c.text) for c in parsed.chunks)
    return parsed, counts


async def add_document(
    sessions: async_sessionmaker[AsyncSession],
    upload: Upload,
    *,
    tenant: str,
    actor: str,
    announce: Announce,
    counter: TokenCounter | None = None,
    document_id: str | None = None,
) -> StoredDocument:
    """Store the upload for `tenant` (replacing `document_id`, or the tenant's document at the
    same URL), audited; a replaced document is forgotten by every process. Raises
    `DocumentTooLarge`, `DocumentUnreadable`, `LookupError` for an unknown `document_id`,
    `UrlTaken`."""
    # Reading a PDF can take a while: not on the loop that serves the other requests.
    parsed, counts = await asyncio.to_thread(read_upload, upload, counter)
    new = NewDocument(
        tenant=tenant,
        parsed=parsed,
        format=upload.format,
        audience=upload.audience,
        content_hash=hashlib.sha256(upload.body).hexdigest(),
        updated_at=upload.updated_at,
        source_url=upload.source_url,
        etag=upload.etag,
        last_modified=upload.last_modified,
        token_counts=counts,
    )
    try:
        stored = await _store(sessions, new, actor=actor, document_id=document_id)
    except IntegrityError as exc:
        # The URL is another document's, or one was just added at it.
        raise UrlTaken(f"another document has the url {upload.source_url}") from exc
    if stored.outcome == "replaced":
        await announce(DocumentsForgotten(tenant, (stored.document.id,)))
    return stored


async def _store(
    sessions: async_sessionmaker[AsyncSession],
    new: NewDocument,
    *,
    actor: str,
    document_id: str | None,
) -> StoredDocument:
    async with sessions.begin() as session:
        stored = await knowledge.store_document(session, new, document_id=document_id)
        await record_audit(
            session,
            actor=actor,
            action=STORED_ACTION,
            reason=f"a knowledge document {stored.outcome}",
            subject_type=AUDIT_SUBJECT,
            subject_id=stored.document.id,
            details={
                "outcome": stored.outcome,
                "title": stored.document.title,
                "audience": stored.document.audience.value,
                "chunks": stored.document.chunk_count,
            },
        )
    return stored


async def remove_document(
    sessions: async_sessionmaker[AsyncSession],
    *,
    tenant: str,
    document_id: str,
    actor: str,
    announce: Announce,
) -> DocumentRecord | None:
    """Delete the tenant's document with its chunks, audited, and have every process forget
    it; the document as it was, or None when the tenant has no such document."""
    async with sessions.begin() as session:
        gone = await knowledge.delete_document(session, tenant, document_id)
        if gone is None:
            return None
        await record_audit(
            session,
            actor=actor,
            action=DELETED_ACTION,
            reason="a knowledge document deleted",
            subject_type=AUDIT_SUBJECT,
            subject_id=gone.id,
            details={"title": gone.title, "chunks": gone.chunk_count},
        )
    await announce(DocumentsForgotten(tenant, (gone.id,)))
    return gone
