"""episode token total

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 12:09:43.516028
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("token_total", sa.BigInteger(), server_default="0", nullable=False)
        )
    # Existing episodes get the sum of their stored message counts.
    op.execute(
        "UPDATE episodes SET token_total = (SELECT COALESCE(SUM(messages.token_count), 0) "
        "FROM messages WHERE messages.episode_id = episodes.id)"
    )


def downgrade() -> None:

    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_column("token_total")
