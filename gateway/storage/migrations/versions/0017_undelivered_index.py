"""turns: a partial index of the replies still to be delivered, by conversation

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03 16:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNDELIVERED = sa.text("delivery_status IN ('retry', 'sending')")


def upgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.create_index(
            "ix_turns_undelivered",
            ["conversation_key"],
            unique=False,
            postgresql_where=_UNDELIVERED,
            sqlite_where=_UNDELIVERED,
        )


def downgrade() -> None:
    with op.batch_alter_table("turns", schema=None) as batch_op:
        batch_op.drop_index("ix_turns_undelivered")
