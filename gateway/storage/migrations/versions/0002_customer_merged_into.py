"""customer merged_into

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 12:05:14.662186
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    with op.batch_alter_table("customers", schema=None) as batch_op:
        batch_op.add_column(sa.Column("merged_into", sa.String(length=32), nullable=True))


def downgrade() -> None:

    with op.batch_alter_table("customers", schema=None) as batch_op:
        batch_op.drop_column("merged_into")
