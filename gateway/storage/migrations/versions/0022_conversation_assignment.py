"""conversation_assignments and conversation_reads: the operator a conversation is assigned
to, and when each operator last opened each conversation (their unread count starts after)

Both follow their conversation: deleting it (an erasure) deletes their rows.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05 02:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_assignments",
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("operator", sa.String(length=200), nullable=False),
        sa.Column("assigned_by", sa.String(length=200), nullable=False),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_assignments_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", name=op.f("pk_conversation_assignments")),
    )
    op.create_index(
        op.f("ix_conversation_assignments_operator"), "conversation_assignments", ["operator"]
    )
    op.create_table(
        "conversation_reads",
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("operator", sa.String(length=200), nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_reads_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("conversation_id", "operator", name=op.f("pk_conversation_reads")),
    )


def downgrade() -> None:
    op.drop_table("conversation_reads")
    op.drop_index(
        op.f("ix_conversation_assignments_operator"), table_name="conversation_assignments"
    )
    op.drop_table("conversation_assignments")
