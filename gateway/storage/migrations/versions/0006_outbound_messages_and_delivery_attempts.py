"""outbound messages and delivery attempts

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29 12:21:14.500559
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "outbound_messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("provider_message_id", sa.String(length=200), nullable=False),
        sa.Column("turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column(
            "reply_message_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("part", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error_code", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["reply_message_id"],
            ["messages.id"],
            name=op.f("fk_outbound_messages_reply_message_id_messages"),
        ),
        sa.ForeignKeyConstraint(
            ["turn_id"], ["turns.id"], name=op.f("fk_outbound_messages_turn_id_turns")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbound_messages")),
        sa.UniqueConstraint(
            "channel",
            "provider_message_id",
            name=op.f("uq_outbound_messages_channel_provider_message_id"),
        ),
    )
    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_outbound_messages_turn_id"), ["turn_id"], unique=False)

    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("delivery_attempts", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:

    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_column("delivery_attempts")

    with op.batch_alter_table("outbound_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outbound_messages_turn_id"))

    op.drop_table("outbound_messages")
