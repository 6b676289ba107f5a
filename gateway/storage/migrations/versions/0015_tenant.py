"""the tenant of inbox rows, messages, turns, episodes and conversations

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 09:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("inbox_messages", "messages", "turns", "episodes", "conversations")
# Written out, so that this revision never changes with `gateway.tenant_ref`.
DEFAULT_TENANT = "default"
TENANT_LENGTH = 700


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column(
                    "tenant",
                    sa.String(length=TENANT_LENGTH),
                    server_default=DEFAULT_TENANT,
                    nullable=False,
                )
            )
    # Inbox rows written before this revision name their host: keep it, so a message accepted
    # after the upgrade still follows the host it came through (the encoding of
    # `TenantRef(default, host)`: '%' and '/' percent-encoded).
    op.execute(
        sa.text(
            "UPDATE inbox_messages SET tenant = :domain || '/' || "
            "replace(replace(host, '%', '%25'), '/', '%2F') "
            "WHERE host IS NOT NULL AND host <> ''"
        ).bindparams(domain=DEFAULT_TENANT)
    )


def downgrade() -> None:
    for table in reversed(TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("tenant")
