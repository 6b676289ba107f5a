"""csat_surveys: the satisfaction question asked of a customer after a conversation was handed
back to the bot or closed by idle time, and their answer (1-5, null until answered)

A survey follows its conversation: deleting it (an erasure) deletes its surveys.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "csat_surveys",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=700), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=True),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("person_took_part", sa.Boolean(), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("score", sa.SmallInteger(), nullable=True),
        sa.CheckConstraint(
            "score IS NULL OR (score >= 1 AND score <= 5)", name=op.f("ck_csat_surveys_score")
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_csat_surveys_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_csat_surveys")),
    )
    op.create_index(
        op.f("ix_csat_surveys_conversation_id"), "csat_surveys", ["conversation_id", "asked_at"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_csat_surveys_conversation_id"), table_name="csat_surveys")
    op.drop_table("csat_surveys")
