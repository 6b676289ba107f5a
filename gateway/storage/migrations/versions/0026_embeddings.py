"""embeddings: text vectors kept beside their rows (messages, knowledge chunks, summaries)

A vector names its subject by one of three nullable foreign keys with ON DELETE CASCADE, so
whatever deletes the subject deletes its vectors; one vector per subject and model (partial
unique indexes, also what the cascades look vectors up by). No other table changes.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05 05:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_ONE_SUBJECT = (
    "(kind = 'message' AND message_id IS NOT NULL"
    " AND chunk_id IS NULL AND summary_id IS NULL)"
    " OR (kind = 'knowledge_chunk' AND chunk_id IS NOT NULL"
    " AND message_id IS NULL AND summary_id IS NULL)"
    " OR (kind = 'summary' AND summary_id IS NOT NULL"
    " AND message_id IS NULL AND chunk_id IS NULL)"
)
# (index, columns, the column that must be set for a row to be indexed, unique)
_INDEXES = (
    ("uq_embeddings_message_model", ["message_id", "model"], "message_id", True),
    ("uq_embeddings_chunk_model", ["chunk_id", "model"], "chunk_id", True),
    ("uq_embeddings_summary_model", ["summary_id", "model"], "summary_id", True),
    ("ix_embeddings_customer_model", ["customer_id", "model"], "customer_id", False),
    ("ix_embeddings_tenant_knowledge", ["tenant", "model"], "chunk_id", False),
)


def upgrade() -> None:
    op.create_table(
        "embeddings",
        sa.Column("id", _BIG_ID, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("message_id", _BIG_ID, nullable=True),
        sa.Column("chunk_id", _BIG_ID, nullable=True),
        sa.Column("summary_id", _BIG_ID, nullable=True),
        sa.Column("customer_id", sa.String(length=32), nullable=True),
        sa.Column("tenant", sa.String(length=700), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(_ONE_SUBJECT, name=op.f("ck_embeddings_one_subject")),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["messages.id"],
            name=op.f("fk_embeddings_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["chunk_id"],
            ["knowledge_chunks.id"],
            name=op.f("fk_embeddings_chunk_id_knowledge_chunks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["summary_id"],
            ["episode_summaries.id"],
            name=op.f("fk_embeddings_summary_id_episode_summaries"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_embeddings_customer_id_customers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_embeddings")),
    )
    for name, columns, present, unique in _INDEXES:
        where = sa.text(f"{present} IS NOT NULL")
        op.create_index(
            name,
            "embeddings",
            columns,
            unique=unique,
            postgresql_where=where,
            sqlite_where=where,
        )


def downgrade() -> None:
    for name, _, _, _ in reversed(_INDEXES):
        op.drop_index(name, table_name="embeddings")
    op.drop_table("embeddings")
