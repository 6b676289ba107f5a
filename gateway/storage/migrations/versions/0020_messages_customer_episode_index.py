"""messages: an index on (customer_id, episode_id, id) for the window's newest turns

The window reads an episode's newest turns after its summary (`messages.window_lines`:
customer, episode, id range, newest first). With only (episode_id, id), PostgreSQL's generic
plan for that prepared statement walks the primary key backwards from the newest message of
every customer; with all three columns in one index it reads only the rows it returns.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-04 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_messages_customer_episode_id",
        "messages",
        ["customer_id", "episode_id", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_messages_customer_episode_id", table_name="messages")
