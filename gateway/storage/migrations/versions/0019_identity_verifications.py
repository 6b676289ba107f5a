"""identity_verifications: one-time codes of step-up verification (digests only)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-04 16:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DEFAULT_TENANT = "default"
_INDEXED = ("identity_id", "customer_id", "target_customer_id")


def upgrade() -> None:
    op.create_table(
        "identity_verifications",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=700), server_default=_DEFAULT_TENANT, nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("target_customer_id", sa.String(length=32), nullable=False),
        sa.Column("identifier_kind", sa.String(length=32), nullable=False),
        sa.Column("identifier_value", sa.String(length=320), nullable=False),
        sa.Column("sent_through", sa.String(length=32), nullable=False),
        sa.Column("code_digest", sa.String(length=64), nullable=False),
        sa.Column("salt", sa.String(length=32), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identity_verifications")),
    )
    with op.batch_alter_table("identity_verifications", schema=None) as batch_op:
        for column in _INDEXED:
            batch_op.create_index(batch_op.f(f"ix_identity_verifications_{column}"), [column])


def downgrade() -> None:
    with op.batch_alter_table("identity_verifications", schema=None) as batch_op:
        for column in reversed(_INDEXED):
            batch_op.drop_index(batch_op.f(f"ix_identity_verifications_{column}"))
    op.drop_table("identity_verifications")
