"""conversations (who answers them) and outbound events

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 07:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("conversation_key", sa.String(length=200), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=True),
        sa.Column("external_id", sa.String(length=200), nullable=False),
        sa.Column("owner", sa.String(length=16), server_default="bot", nullable=False),
        sa.Column("held_by", sa.String(length=200), nullable=True),
        sa.Column("owner_since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_conversations_customer_id_customers")
        ),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_conversations_identity_id_channel_identities"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
        sa.UniqueConstraint("conversation_key", name=op.f("uq_conversations_conversation_key")),
    )
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_conversations_customer_id"), ["customer_id"], unique=False
        )
        batch_op.create_index(
            "ix_conversations_owner_last_message_at", ["owner", "last_message_at"], unique=False
        )

    op.create_table(
        "outbound_events",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbound_events")),
    )
    with op.batch_alter_table("outbound_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_outbound_events_due",
            ["next_attempt_at"],
            unique=False,
            postgresql_where=sa.text("delivered_at IS NULL"),
            sqlite_where=sa.text("delivered_at IS NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("outbound_events", schema=None) as batch_op:
        batch_op.drop_index("ix_outbound_events_due")
    op.drop_table("outbound_events")
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index("ix_conversations_owner_last_message_at")
        batch_op.drop_index(batch_op.f("ix_conversations_customer_id"))
    op.drop_table("conversations")
