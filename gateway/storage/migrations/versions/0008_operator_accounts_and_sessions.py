"""operator accounts and sessions

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29 13:14:51.423449
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("username", sa.String(length=200), nullable=False),
        sa.Column("password_hash", sa.String(length=400), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
        sa.UniqueConstraint("username", name=op.f("uq_operators_username")),
    )
    op.create_table(
        "operator_sessions",
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("operator_id", sa.String(length=32), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_operator_sessions_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("token_sha256", name=op.f("pk_operator_sessions")),
    )
    with op.batch_alter_table("operator_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_operator_sessions_operator_id"), ["operator_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("operator_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_operator_sessions_operator_id"))

    op.drop_table("operator_sessions")
    op.drop_table("operators")
