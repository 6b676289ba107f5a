"""The ORM rows of a tenant's knowledge base: its documents and the chunks they are read into.

Kept apart from `models.py` (which imports this module at its end). A chunk copies its
document's tenant and audience, so the read for a window filters chunks alone; a document's
chunks follow it (ON DELETE CASCADE) and are replaced all at once when it changes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import text as sql_text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import TENANT_LENGTH, Base, new_id

# Integer autoincrement keys on SQLite need the plain INTEGER type (as `models.BigId`).
ChunkId = BigInteger().with_variant(Integer(), "sqlite")
# A longer title is cut (a heading is not meant to be a paragraph).
TITLE_LENGTH = 500
# A source URL as the outbound fetcher accepts one; longer ones are refused at the edge.
URL_LENGTH = 2048


class KnowledgeDocument(Base):
    """One document: uploaded (no `source_url`) or fetched from a URL (one per URL and
    tenant). `content_hash` is the SHA-256 of the bytes it was read from, so a re-sync that
    brings the same bytes rewrites nothing; `updated_at` is the document's own date (shown to
    the model), `synced_at` when its content was last read successfully."""

    __tablename__ = "knowledge_documents"
    __table_args__ = (
        Index("ix_knowledge_documents_tenant", "tenant", "created_at"),
        Index(
            "uq_knowledge_documents_tenant_source_url",
            "tenant",
            "source_url",
            unique=True,
            postgresql_where=sql_text("source_url IS NOT NULL"),
            sqlite_where=sql_text("source_url IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH))
    title: Mapped[str] = mapped_column(String(TITLE_LENGTH))
    source_url: Mapped[str | None] = mapped_column(String(URL_LENGTH))
    # One of `gateway.knowledge.records.FORMATS`.
    format: Mapped[str] = mapped_column(String(16))
    # One of `identity.audience.Audience`'s values.
    audience: Mapped[str] = mapped_column(String(16))
    content_hash: Mapped[str] = mapped_column(String(64))
    etag: Mapped[str | None] = mapped_column(String(500))
    last_modified: Mapped[datetime | None]
    updated_at: Mapped[datetime]
    synced_at: Mapped[datetime]
    sync_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class KnowledgeChunk(Base):
    """One retrievable piece of a document, in its order, under its headings (a JSON list,
    outermost first)."""

    __tablename__ = "knowledge_chunks"
    __table_args__ = (
        UniqueConstraint("document_id", "position"),
        Index("ix_knowledge_chunks_tenant_audience", "tenant", "audience"),
    )

    id: Mapped[int] = mapped_column(ChunkId, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("knowledge_documents.id", ondelete="CASCADE")
    )
    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH))
    audience: Mapped[str] = mapped_column(String(16))
    position: Mapped[int] = mapped_column(Integer)
    headings: Mapped[list[str]] = mapped_column(JSON)
    text: Mapped[str] = mapped_column(Text)
    token_count: Mapped[int | None] = mapped_column(Integer)
