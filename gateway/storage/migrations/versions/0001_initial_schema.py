"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29 11:47:48.157125
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "audit_log",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("subject_type", sa.String(length=64), nullable=False),
        sa.Column("subject_id", sa.String(length=64), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_log_action"), ["action"], unique=False)
        batch_op.create_index(batch_op.f("ix_audit_log_subject_id"), ["subject_id"], unique=False)

    op.create_table(
        "campaigns",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("variables", sa.JSON(), nullable=False),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("expire_at", sa.Date(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_campaigns")),
    )
    op.create_table(
        "customers",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=True),
        sa.Column("locale", sa.String(length=16), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customers")),
    )
    op.create_table(
        "tenant_configs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("domain", sa.String(length=200), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=True),
        sa.Column("assistant_id", sa.String(length=200), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenant_configs")),
        sa.UniqueConstraint(
            "domain",
            "host",
            "assistant_id",
            name=op.f("uq_tenant_configs_domain_host_assistant_id"),
        ),
    )
    op.create_table(
        "anchored_messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("campaign_id", sa.String(length=32), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaigns.id"],
            name=op.f("fk_anchored_messages_campaign_id_campaigns"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_anchored_messages")),
    )
    with op.batch_alter_table("anchored_messages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_anchored_messages_campaign_id"), ["campaign_id"], unique=False
        )

    op.create_table(
        "channel_identities",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("external_id", sa.String(length=320), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("link_level", sa.String(length=16), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_channel_identities_customer_id_customers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_channel_identities")),
        sa.UniqueConstraint(
            "channel", "external_id", name=op.f("uq_channel_identities_channel_external_id")
        ),
    )
    with op.batch_alter_table("channel_identities", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_channel_identities_customer_id"), ["customer_id"], unique=False
        )

    op.create_table(
        "customer_identifiers",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("value", sa.String(length=320), nullable=False),
        sa.Column("link_level", sa.String(length=16), nullable=False),
        sa.Column("source_identity_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_customer_identifiers_customer_id_customers"),
        ),
        sa.ForeignKeyConstraint(
            ["source_identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_customer_identifiers_source_identity_id_channel_identities"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customer_identifiers")),
        sa.UniqueConstraint(
            "customer_id",
            "kind",
            "value",
            name=op.f("uq_customer_identifiers_customer_id_kind_value"),
        ),
    )
    with op.batch_alter_table("customer_identifiers", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_customer_identifiers_customer_id"), ["customer_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_customer_identifiers_value"), ["value"], unique=False)

    op.create_table(
        "episodes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=True),
        sa.Column("external_ref", sa.String(length=200), nullable=True),
        sa.Column("campaign_id", sa.String(length=32), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("transcript_confidence", sa.Float(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_message_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"], ["campaigns.id"], name=op.f("fk_episodes_campaign_id_campaigns")
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_episodes_customer_id_customers")
        ),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_episodes_identity_id_channel_identities"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_episodes")),
        sa.UniqueConstraint("external_ref", name=op.f("uq_episodes_external_ref")),
    )
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.create_index(
            "ix_episodes_customer_channel_status",
            ["customer_id", "channel", "status"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_episodes_customer_id"), ["customer_id"], unique=False)

    op.create_table(
        "pending_links",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=False),
        sa.Column("target_customer_id", sa.String(length=32), nullable=False),
        sa.Column("identifier_kind", sa.String(length=32), nullable=False),
        sa.Column("identifier_value", sa.String(length=320), nullable=False),
        sa.Column("claimed_level", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_pending_links_identity_id_channel_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["target_customer_id"],
            ["customers.id"],
            name=op.f("fk_pending_links_target_customer_id_customers"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pending_links")),
    )
    with op.batch_alter_table("pending_links", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_pending_links_identity_id"), ["identity_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_pending_links_status"), ["status"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_pending_links_target_customer_id"), ["target_customer_id"], unique=False
        )

    op.create_table(
        "compaction_traces",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=True),
        sa.Column("compactor", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=128), nullable=True),
        sa.Column("facts_before", sa.JSON(), nullable=False),
        sa.Column("facts_after", sa.JSON(), nullable=False),
        sa.Column("summary_before", sa.Text(), nullable=True),
        sa.Column("summary_after", sa.Text(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_compaction_traces_customer_id_customers"),
        ),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_compaction_traces_episode_id_episodes")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compaction_traces")),
    )
    with op.batch_alter_table("compaction_traces", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_compaction_traces_customer_id"), ["customer_id"], unique=False
        )

    op.create_table(
        "messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("identity_id", sa.String(length=32), nullable=True),
        sa.Column("channel", sa.String(length=32), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("provider_message_id", sa.String(length=200), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("transcript_confidence", sa.Float(), nullable=True),
        sa.Column("words", sa.JSON(), nullable=True),
        sa.Column("media", sa.JSON(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.Column("redacted", sa.Boolean(), nullable=False),
        sa.Column(
            "supersedes_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_messages_customer_id_customers")
        ),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_messages_episode_id_episodes")
        ),
        sa.ForeignKeyConstraint(
            ["identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_messages_identity_id_channel_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["supersedes_id"], ["messages.id"], name=op.f("fk_messages_supersedes_id_messages")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
        sa.UniqueConstraint(
            "channel", "provider_message_id", name=op.f("uq_messages_channel_provider_message_id")
        ),
    )
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.create_index("ix_messages_customer_id_id", ["customer_id", "id"], unique=False)
        batch_op.create_index("ix_messages_episode_id_id", ["episode_id", "id"], unique=False)

    op.create_table(
        "episode_summaries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("episode_id", sa.String(length=32), nullable=False),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column(
            "last_message_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("origin_channel", sa.String(length=32), nullable=False),
        sa.Column("transcript_confidence", sa.Float(), nullable=True),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_episode_summaries_customer_id_customers"),
        ),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_episode_summaries_episode_id_episodes")
        ),
        sa.ForeignKeyConstraint(
            ["last_message_id"],
            ["messages.id"],
            name=op.f("fk_episode_summaries_last_message_id_messages"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_episode_summaries")),
        sa.UniqueConstraint("episode_id", name=op.f("uq_episode_summaries_episode_id")),
    )
    with op.batch_alter_table("episode_summaries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_episode_summaries_customer_id"), ["customer_id"], unique=False
        )

    op.create_table(
        "facts",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("customer_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column(
            "source_message_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("source_channel", sa.String(length=32), nullable=False),
        sa.Column("source_episode_id", sa.String(length=32), nullable=False),
        sa.Column("source_identity_id", sa.String(length=32), nullable=True),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.Column("confirmed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "confirmed_by_message_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("pinned", sa.Boolean(), nullable=False),
        sa.Column("retracted", sa.Boolean(), nullable=False),
        sa.Column(
            "superseded_by", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["confirmed_by_message_id"],
            ["messages.id"],
            name=op.f("fk_facts_confirmed_by_message_id_messages"),
        ),
        sa.ForeignKeyConstraint(
            ["customer_id"], ["customers.id"], name=op.f("fk_facts_customer_id_customers")
        ),
        sa.ForeignKeyConstraint(
            ["source_episode_id"], ["episodes.id"], name=op.f("fk_facts_source_episode_id_episodes")
        ),
        sa.ForeignKeyConstraint(
            ["source_identity_id"],
            ["channel_identities.id"],
            name=op.f("fk_facts_source_identity_id_channel_identities"),
        ),
        sa.ForeignKeyConstraint(
            ["source_message_id"], ["messages.id"], name=op.f("fk_facts_source_message_id_messages")
        ),
        sa.ForeignKeyConstraint(
            ["superseded_by"], ["facts.id"], name=op.f("fk_facts_superseded_by_facts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_facts")),
    )
    with op.batch_alter_table("facts", schema=None) as batch_op:
        batch_op.create_index("ix_facts_customer_id_key", ["customer_id", "key"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("facts", schema=None) as batch_op:
        batch_op.drop_index("ix_facts_customer_id_key")

    op.drop_table("facts")
    with op.batch_alter_table("episode_summaries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episode_summaries_customer_id"))

    op.drop_table("episode_summaries")
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_index("ix_messages_episode_id_id")
        batch_op.drop_index("ix_messages_customer_id_id")

    op.drop_table("messages")
    with op.batch_alter_table("compaction_traces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_compaction_traces_customer_id"))

    op.drop_table("compaction_traces")
    with op.batch_alter_table("pending_links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pending_links_target_customer_id"))
        batch_op.drop_index(batch_op.f("ix_pending_links_status"))
        batch_op.drop_index(batch_op.f("ix_pending_links_identity_id"))

    op.drop_table("pending_links")
    with op.batch_alter_table("episodes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_episodes_customer_id"))
        batch_op.drop_index("ix_episodes_customer_channel_status")

    op.drop_table("episodes")
    with op.batch_alter_table("customer_identifiers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_customer_identifiers_value"))
        batch_op.drop_index(batch_op.f("ix_customer_identifiers_customer_id"))

    op.drop_table("customer_identifiers")
    with op.batch_alter_table("channel_identities", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_channel_identities_customer_id"))

    op.drop_table("channel_identities")
    with op.batch_alter_table("anchored_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_anchored_messages_campaign_id"))

    op.drop_table("anchored_messages")
    op.drop_table("tenant_configs")
    op.drop_table("customers")
    op.drop_table("campaigns")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_log_subject_id"))
        batch_op.drop_index(batch_op.f("ix_audit_log_action"))

    op.drop_table("audit_log")
