"""action_confirmations: writes the model asked for, waiting for the customer's confirmation

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-04 14:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DEFAULT_TENANT = "default"


def upgrade() -> None:
    op.create_table(
        "action_confirmations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=700), server_default=_DEFAULT_TENANT, nullable=False),
        sa.Column("conversation_key", sa.String(length=200), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=False),
        sa.Column("turn_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_action_confirmations")),
    )
    with op.batch_alter_table("action_confirmations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_action_confirmations_conversation_key"), ["conversation_key"]
        )
        batch_op.create_index(batch_op.f("ix_action_confirmations_customer_id"), ["customer_id"])


def downgrade() -> None:
    with op.batch_alter_table("action_confirmations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_action_confirmations_customer_id"))
        batch_op.drop_index(batch_op.f("ix_action_confirmations_conversation_key"))
    op.drop_table("action_confirmations")
