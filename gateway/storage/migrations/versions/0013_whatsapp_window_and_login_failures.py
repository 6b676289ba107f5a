"""the WhatsApp customer-service window of a conversation, and failed console logins

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 13:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("last_inbound_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("window_closed_at", sa.DateTime(timezone=True), nullable=True)
        )

    op.create_table(
        "login_failures",
        sa.Column("id", BIG_ID, autoincrement=True, nullable=False),
        sa.Column("account", sa.String(length=200), nullable=False),
        sa.Column("client", sa.String(length=64), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index(
            "ix_login_failures_account_failed_at", ["account", "failed_at"], unique=False
        )
        batch_op.create_index(
            "ix_login_failures_client_failed_at", ["client", "failed_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_client_failed_at")
        batch_op.drop_index("ix_login_failures_account_failed_at")
    op.drop_table("login_failures")
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_column("window_closed_at")
        batch_op.drop_column("last_inbound_at")
