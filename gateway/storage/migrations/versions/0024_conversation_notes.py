"""conversation_notes: operators' internal notes on a conversation, shown to operators only
(never sent to a channel, never in the model's window)

A note follows its conversation: deleting it (an erasure) deletes its notes.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05 03:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_notes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conversation_notes_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversation_notes")),
    )
    op.create_index(
        op.f("ix_conversation_notes_conversation_id"),
        "conversation_notes",
        ["conversation_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_conversation_notes_conversation_id"), table_name="conversation_notes")
    op.drop_table("conversation_notes")
