"""identifier row per source identity

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 12:11:22.406782
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    with op.batch_alter_table("customer_identifiers", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("uq_customer_identifiers_customer_id_kind_value"), type_="unique"
        )
        batch_op.create_unique_constraint(
            "uq_customer_identifiers_source",
            ["customer_id", "kind", "value", "source_identity_id"],
        )


def downgrade() -> None:

    with op.batch_alter_table("customer_identifiers", schema=None) as batch_op:
        batch_op.drop_constraint(
            "uq_customer_identifiers_source",
            type_="unique",
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_customer_identifiers_customer_id_kind_value"),
            ["customer_id", "kind", "value"],
        )
