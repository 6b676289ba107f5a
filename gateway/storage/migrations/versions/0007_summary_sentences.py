"""summary sentences

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29 12:38:37.804305
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    with op.batch_alter_table("episode_summaries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sentences", sa.JSON(), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("episode_summaries", schema=None) as batch_op:
        batch_op.drop_column("sentences")
