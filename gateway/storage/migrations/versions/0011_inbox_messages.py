"""inbox messages

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29 17:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "inbox_messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("provider_message_id", sa.String(length=200), nullable=False),
        sa.Column("thread_key", sa.String(length=360), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("dead_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox_messages")),
        sa.UniqueConstraint(
            "channel",
            "provider_message_id",
            name=op.f("uq_inbox_messages_channel_provider_message_id"),
        ),
    )
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inbox_messages_claimed",
            ["claimed_until", "thread_key"],
            unique=False,
            postgresql_where=sa.text("claimed_until IS NOT NULL"),
            sqlite_where=sa.text("claimed_until IS NOT NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("inbox_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_messages_claimed")

    op.drop_table("inbox_messages")
