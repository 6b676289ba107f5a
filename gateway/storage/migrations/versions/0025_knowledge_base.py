"""knowledge_documents and knowledge_chunks: a tenant's knowledge base, each chunk with its
document's tenant and audience copied for the window's read

A document is unique per tenant and source URL (uploaded ones have none); its chunks follow
it (ON DELETE CASCADE).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05 04:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_WITH_URL = sa.text("source_url IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "knowledge_documents",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=700), nullable=False),
        sa.Column("title", sa.String(length=500), nullable=False),
        sa.Column("source_url", sa.String(length=2048), nullable=True),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("audience", sa.String(length=16), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("etag", sa.String(length=500), nullable=True),
        sa.Column("last_modified", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sync_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_documents")),
    )
    op.create_index(
        "ix_knowledge_documents_tenant", "knowledge_documents", ["tenant", "created_at"]
    )
    op.create_index(
        "uq_knowledge_documents_tenant_source_url",
        "knowledge_documents",
        ["tenant", "source_url"],
        unique=True,
        postgresql_where=_WITH_URL,
        sqlite_where=_WITH_URL,
    )
    op.create_table(
        "knowledge_chunks",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=700), nullable=False),
        sa.Column("audience", sa.String(length=16), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("headings", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["knowledge_documents.id"],
            name=op.f("fk_knowledge_chunks_document_id_knowledge_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_chunks")),
        sa.UniqueConstraint(
            "document_id", "position", name=op.f("uq_knowledge_chunks_document_id_position")
        ),
    )
    op.create_index(
        "ix_knowledge_chunks_tenant_audience", "knowledge_chunks", ["tenant", "audience"]
    )


def downgrade() -> None:
    op.drop_index("ix_knowledge_chunks_tenant_audience", table_name="knowledge_chunks")
    op.drop_table("knowledge_chunks")
    op.drop_index("uq_knowledge_documents_tenant_source_url", table_name="knowledge_documents")
    op.drop_index("ix_knowledge_documents_tenant", table_name="knowledge_documents")
    op.drop_table("knowledge_documents")
