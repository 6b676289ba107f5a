"""indexes on the references that erasure and retention delete through

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 14:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, partial): the same list as `gateway.storage.models.REFERENCE_INDEXES`, written
# out so that this revision never changes with the models.
INDEXES: tuple[tuple[str, str, bool], ...] = (
    ("messages", "supersedes_id", True),
    ("messages", "identity_id", True),
    ("facts", "source_message_id", False),
    ("facts", "confirmed_by_message_id", True),
    ("facts", "superseded_by", True),
    ("facts", "source_identity_id", True),
    ("turns", "reply_message_id", True),
    ("outbound_messages", "reply_message_id", True),
    ("episode_summaries", "last_message_id", False),
    ("compaction_traces", "episode_id", True),
    ("episodes", "identity_id", True),
    ("episodes", "campaign_id", True),
    ("conversations", "identity_id", True),
    ("customer_identifiers", "source_identity_id", True),
)


def upgrade() -> None:
    for table, column, partial in INDEXES:
        where = sa.text(f"{column} IS NOT NULL") if partial else None
        op.create_index(
            f"ix_{table}_{column}_ref",
            table,
            [column],
            unique=False,
            postgresql_where=where,
            sqlite_where=where,
        )


def downgrade() -> None:
    for table, column, _partial in reversed(INDEXES):
        op.drop_index(f"ix_{table}_{column}_ref", table_name=table)
