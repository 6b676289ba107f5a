"""erasure tombstones: the hashed provider ids of erased messages, until their expiry

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 12:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "erasure_tombstones",
        sa.Column("key_sha256", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key_sha256", name=op.f("pk_erasure_tombstones")),
    )
    with op.batch_alter_table("erasure_tombstones", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_erasure_tombstones_expires_at"), ["expires_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("erasure_tombstones", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_erasure_tombstones_expires_at"))
    op.drop_table("erasure_tombstones")
