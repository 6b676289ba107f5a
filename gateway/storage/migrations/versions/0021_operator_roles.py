"""operators: a role (admin or agent) and when an account was disabled

Every account stored before this revision becomes an admin, so that nobody is locked out of
the pages an agent may not open; an account created later is an agent unless made an admin.
`disabled` becomes `disabled_at`: when an account was disabled, null while it may log in.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05 01:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, so that this revision never changes with the code's roles.
ADMIN = "admin"
AGENT = "agent"


def upgrade() -> None:
    # Plain ALTER TABLEs, not a batch: recreating `operators` on SQLite would drop a table
    # that `operator_sessions` references while foreign keys are enforced.
    op.add_column(
        "operators",
        sa.Column("role", sa.String(length=16), server_default=AGENT, nullable=False),
    )
    op.add_column("operators", sa.Column("disabled_at", sa.DateTime(timezone=True)))
    op.execute(sa.text("UPDATE operators SET role = :admin").bindparams(admin=ADMIN))
    # When an account was disabled was never stored: its creation is the earliest it can be.
    op.execute(sa.text("UPDATE operators SET disabled_at = created_at WHERE disabled"))
    op.drop_column("operators", "disabled")


def downgrade() -> None:
    op.add_column(
        "operators",
        sa.Column("disabled", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.execute(sa.text("UPDATE operators SET disabled = (disabled_at IS NOT NULL)"))
    op.drop_column("operators", "disabled_at")
    op.drop_column("operators", "role")
