"""SQLAlchemy 2.0 ORM tables. These classes never leave the storage layer:
repositories translate them into the frozen records of `gateway.storage.records`."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    event,
)
from sqlalchemy import (
    text as sql_text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, Mapper, mapped_column
from sqlalchemy.types import TypeDecorator

from gateway.runtime.clock import utcnow
from gateway.tenant_ref import DEFAULT_TENANT_ENCODED

# Integer autoincrement keys on SQLite need the plain INTEGER type.
BigId = BigInteger().with_variant(Integer(), "sqlite")
# An encoded tenant: domain, host (up to 255) and assistant id, percent-encoded.
TENANT_LENGTH = 700

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[datetime]):
    """Stores UTC and always returns aware datetimes, also on SQLite (which keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; use gateway.runtime.clock.utcnow()")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, datetime: UtcDateTime()}


class Customer(Base):
    __tablename__ = "customers"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    display_name: Mapped[str | None] = mapped_column(String(200))
    locale: Mapped[str | None] = mapped_column(String(16))
    # Set by an operator merge; a merged-away customer owns nothing and is never linked to.
    merged_into: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ChannelIdentity(Base):
    __tablename__ = "channel_identities"
    __table_args__ = (UniqueConstraint("channel", "external_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    channel: Mapped[str] = mapped_column(String(32))
    external_id: Mapped[str] = mapped_column(String(320))
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    link_level: Mapped[str] = mapped_column(String(16))
    evidence: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class CustomerIdentifier(Base):
    """An identifier (phone, e-mail, account…) known for a customer, and how sure we are."""

    __tablename__ = "customer_identifiers"
    # One row per source identity: after a merge the customer may hold the same identifier from
    # two identities, and a split must be able to give each row back to where it came from.
    __table_args__ = (
        UniqueConstraint(
            "customer_id",
            "kind",
            "value",
            "source_identity_id",
            name="uq_customer_identifiers_source",
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    value: Mapped[str] = mapped_column(String(320), index=True)
    link_level: Mapped[str] = mapped_column(String(16))
    source_identity_id: Mapped[str | None] = mapped_column(ForeignKey("channel_identities.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PendingLink(Base):
    """A proposed link that only an operator (or a later verification) may confirm."""

    __tablename__ = "pending_links"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    identity_id: Mapped[str] = mapped_column(ForeignKey("channel_identities.id"), index=True)
    target_customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    identifier_kind: Mapped[str] = mapped_column(String(32))
    identifier_value: Mapped[str] = mapped_column(String(320))
    claimed_level: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    decided_at: Mapped[datetime | None]
    decided_by: Mapped[str | None] = mapped_column(String(200))


class Episode(Base):
    __tablename__ = "episodes"
    __table_args__ = (
        Index("ix_episodes_customer_channel_status", "customer_id", "channel", "status"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    channel: Mapped[str] = mapped_column(String(32))
    identity_id: Mapped[str | None] = mapped_column(ForeignKey("channel_identities.id"))
    external_ref: Mapped[str | None] = mapped_column(String(200), unique=True)
    campaign_id: Mapped[str | None] = mapped_column(ForeignKey("campaigns.id"))
    status: Mapped[str] = mapped_column(String(16), default="open")
    version: Mapped[int] = mapped_column(Integer, default=1)
    transcript_confidence: Mapped[float | None] = mapped_column(Float)
    # Running sum of the stored token counts of the episode's messages, kept at ingest so the
    # full-history cost of a customer is a sum over episodes, not over messages.
    token_total: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    # The tenant the message entered through (`gateway.tenant_ref.TenantRef`, encoded): every
    # later step looks its settings up by it.
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_message_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None]


class Message(Base):
    """A raw message: written once, never updated (edits and redactions are new rows)."""

    __tablename__ = "messages"
    __table_args__ = (
        UniqueConstraint("channel", "provider_message_id"),
        Index("ix_messages_customer_id_id", "customer_id", "id"),
        Index("ix_messages_episode_id_id", "episode_id", "id"),
        # The window's newest turns of an episode (`messages.window_lines`), whatever plan.
        Index("ix_messages_customer_episode_id", "customer_id", "episode_id", "id"),
        Index("ix_messages_thread_key_id", "thread_key", "id"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    episode_id: Mapped[str] = mapped_column(ForeignKey("episodes.id"))
    identity_id: Mapped[str | None] = mapped_column(ForeignKey("channel_identities.id"))
    channel: Mapped[str] = mapped_column(String(32))
    role: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    provider_message_id: Mapped[str | None] = mapped_column(String(200))
    # The chat thread on its channel ("webchat:<visitor>", "whatsapp:+55…"): inbound and replies.
    thread_key: Mapped[str | None] = mapped_column(String(360))
    token_count: Mapped[int] = mapped_column(Integer)
    transcript_confidence: Mapped[float | None] = mapped_column(Float)
    words: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    media: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    extra: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    redacted: Mapped[bool] = mapped_column(Boolean, default=False)
    supersedes_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("messages.id"))
    # The tenant the message entered through (`gateway.tenant_ref.TenantRef`, encoded): every
    # later step looks its settings up by it.
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class InboxMessage(Base):
    """A provider webhook's message, verified and parsed, kept from the acknowledgement until
    it is stored as a `Message` (identity resolved, turn created); then the row is deleted.

    Writing this one row (group-committed with the other webhooks arriving at the same time)
    is all a webhook waits for; the rest of accepting runs in the background. Rows of one
    `thread_key` are processed in `id` order, one claim at a time."""

    __tablename__ = "inbox_messages"
    __table_args__ = (
        UniqueConstraint("channel", "provider_message_id"),
        # Only the rows a claim holds (a handful), so finding the senders held stays cheap
        # however long the inbox grows under a burst.
        Index(
            "ix_inbox_messages_claimed",
            "claimed_until",
            "thread_key",
            postgresql_where=sql_text("claimed_until IS NOT NULL"),
            sqlite_where=sql_text("claimed_until IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(32))
    provider_message_id: Mapped[str] = mapped_column(String(200))
    thread_key: Mapped[str] = mapped_column(String(360))
    host: Mapped[str | None] = mapped_column(String(255))
    # The tenant the message entered through (`gateway.tenant_ref.TenantRef`, encoded): every
    # later step looks its settings up by it.
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)  # the parsed InboundMessage
    received_at: Mapped[datetime]
    claimed_until: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)
    # Set after repeated failures that were not outages: kept for an operator, skipped after.
    dead_at: Mapped[datetime | None]


# A turn whose reply is still to be delivered; as SQL text, literal values, so that a query
# using it is seen to match the partial index `ix_turns_undelivered` even as a prepared one.
UNDELIVERED = "delivery_status IN ('retry', 'sending')"


class TurnRow(Base):
    """One inbound message's turn: pending until answered; usage and budget report kept."""

    __tablename__ = "turns"
    __table_args__ = (
        Index("ix_turns_conversation_status", "conversation_key", "status"),
        # The replies still to be delivered (few at any time), looked at on every drain.
        Index(
            "ix_turns_undelivered",
            "conversation_key",
            postgresql_where=sql_text(UNDELIVERED),
            sqlite_where=sql_text(UNDELIVERED),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    inbound_message_id: Mapped[int] = mapped_column(BigId, ForeignKey("messages.id"), unique=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    episode_id: Mapped[str] = mapped_column(ForeignKey("episodes.id"))
    conversation_key: Mapped[str] = mapped_column(String(200))
    # The tenant the message entered through (`gateway.tenant_ref.TenantRef`, encoded): every
    # later step looks its settings up by it.
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    status: Mapped[str] = mapped_column(String(16), default="pending")
    reply_message_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("messages.id"))
    provider: Mapped[str | None] = mapped_column(String(32))
    model: Mapped[str | None] = mapped_column(String(128))
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    delivery_status: Mapped[str | None] = mapped_column(String(16))
    delivery_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # While a process hands the reply to its channel it holds this lease; another process
    # (the sweep) may only send after the lease ran out, so one reply is sent once.
    delivery_lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class OutboundMessage(Base):
    """One message a provider accepted from us (a long reply may be several), with the
    delivery status its callbacks report; the status only moves forward."""

    __tablename__ = "outbound_messages"
    __table_args__ = (UniqueConstraint("channel", "provider_message_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    channel: Mapped[str] = mapped_column(String(32))
    provider_message_id: Mapped[str] = mapped_column(String(200))
    turn_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("turns.id"), index=True)
    reply_message_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("messages.id"))
    part: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default="queued")
    error_code: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class ConversationFence(Base):
    """The highest lock fencing token that wrote to a conversation; a stale holder's token is
    lower and its write is refused."""

    __tablename__ = "conversation_fences"

    conversation_key: Mapped[str] = mapped_column(String(200), primary_key=True)
    fence: Mapped[int] = mapped_column(BigInteger, default=0)


class Conversation(Base):
    """One customer on one channel identity (a turn's `conversation_key`), and who answers it:
    the bot, nobody yet (a human was asked for) or the operator who holds it."""

    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_owner_last_message_at", "owner", "last_message_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    conversation_key: Mapped[str] = mapped_column(String(200), unique=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    channel: Mapped[str] = mapped_column(String(32))
    identity_id: Mapped[str | None] = mapped_column(ForeignKey("channel_identities.id"))
    # The channel identity's external id as the channel spells it ("+5511…", a chat id).
    external_id: Mapped[str] = mapped_column(String(200))
    # The tenant the message entered through (`gateway.tenant_ref.TenantRef`, encoded): every
    # later step looks its settings up by it.
    tenant: Mapped[str] = mapped_column(
        String(TENANT_LENGTH), default=DEFAULT_TENANT_ENCODED, server_default=DEFAULT_TENANT_ENCODED
    )
    owner: Mapped[str] = mapped_column(String(16), default="bot", server_default="bot")
    held_by: Mapped[str | None] = mapped_column(String(200))
    owner_since: Mapped[datetime] = mapped_column(default=utcnow)
    last_message_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # WhatsApp's customer-service window: open until 24 h after the customer's last inbound
    # message, unless the provider answered that it is closed (at `window_closed_at`, later
    # than that message).
    last_inbound_at: Mapped[datetime | None]
    window_closed_at: Mapped[datetime | None]


class OutboundEvent(Base):
    """An event for `RELAYDESK_EVENTS_URL`, kept until the receiver took it (2xx), so a
    restart or a receiver that is down loses none; retried with backoff."""

    __tablename__ = "outbound_events"
    __table_args__ = (
        Index(
            "ix_outbound_events_due",
            "next_attempt_at",
            postgresql_where=sql_text("delivered_at IS NULL"),
            sqlite_where=sql_text("delivered_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    lease_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Fact(Base):
    """A durable typed field with the message it came from; corrections supersede."""

    __tablename__ = "facts"
    __table_args__ = (Index("ix_facts_customer_id_key", "customer_id", "key"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"))
    key: Mapped[str] = mapped_column(String(100))
    value: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(String(32))
    tags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    source_message_id: Mapped[int] = mapped_column(BigId, ForeignKey("messages.id"))
    source_channel: Mapped[str] = mapped_column(String(32))
    source_episode_id: Mapped[str] = mapped_column(ForeignKey("episodes.id"))
    source_identity_id: Mapped[str | None] = mapped_column(ForeignKey("channel_identities.id"))
    confidence: Mapped[float] = mapped_column(Float, default=1.0)
    confirmed: Mapped[bool] = mapped_column(Boolean, default=False)
    confirmed_at: Mapped[datetime | None]
    confirmed_by_message_id: Mapped[int | None] = mapped_column(BigId, ForeignKey("messages.id"))
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    retracted: Mapped[bool] = mapped_column(Boolean, default=False)
    superseded_by: Mapped[int | None] = mapped_column(BigId, ForeignKey("facts.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class EpisodeSummary(Base):
    """`{summary, last_message_id}` per episode; derived data, rebuilt from raw messages."""

    __tablename__ = "episode_summaries"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    episode_id: Mapped[str] = mapped_column(ForeignKey("episodes.id"), unique=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    summary: Mapped[str] = mapped_column(Text)
    last_message_id: Mapped[int] = mapped_column(BigId, ForeignKey("messages.id"))
    origin_channel: Mapped[str] = mapped_column(String(32))
    transcript_confidence: Mapped[float | None] = mapped_column(Float)
    token_count: Mapped[int] = mapped_column(Integer)
    # The summary's sentences, each with the message it came from (recall and audit).
    sentences: Mapped[list[Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class CompactionTrace(Base):
    __tablename__ = "compaction_traces"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    customer_id: Mapped[str] = mapped_column(ForeignKey("customers.id"), index=True)
    episode_id: Mapped[str | None] = mapped_column(ForeignKey("episodes.id"))
    compactor: Mapped[str] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(String(128))
    facts_before: Mapped[dict[str, Any]] = mapped_column(default=dict)
    facts_after: Mapped[dict[str, Any]] = mapped_column(default=dict)
    summary_before: Mapped[str | None] = mapped_column(Text)
    summary_after: Mapped[str | None] = mapped_column(Text)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    duration_ms: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Campaign(Base):
    __tablename__ = "campaigns"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(200))
    variables: Mapped[dict[str, Any]] = mapped_column(default=dict)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)
    expire_at: Mapped[date | None] = mapped_column(Date)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AnchoredMessage(Base):
    __tablename__ = "anchored_messages"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    campaign_id: Mapped[str] = mapped_column(ForeignKey("campaigns.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AuditEntry(Base):
    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(64), index=True)
    reason: Mapped[str] = mapped_column(Text)
    subject_type: Mapped[str] = mapped_column(String(64))
    subject_id: Mapped[str] = mapped_column(String(64), index=True)
    details: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Operator(Base):
    """A console account; the password is kept only as a salted scrypt hash."""

    __tablename__ = "operators"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    username: Mapped[str] = mapped_column(String(200), unique=True)
    password_hash: Mapped[str] = mapped_column(String(400))
    # "admin" or "agent" (`repositories.operators.OperatorRole`).
    role: Mapped[str] = mapped_column(String(16), default="agent", server_default="agent")
    # Null while the account may log in.
    disabled_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class OperatorSession(Base):
    """A console login: the cookie holds a random token, the table only its SHA-256."""

    __tablename__ = "operator_sessions"

    token_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"), index=True)
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]


class LoginFailure(Base):
    """One failed console login, by account and client address: recent ones throttle both."""

    __tablename__ = "login_failures"
    __table_args__ = (
        Index("ix_login_failures_account_failed_at", "account", "failed_at"),
        Index("ix_login_failures_client_failed_at", "client", "failed_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    account: Mapped[str] = mapped_column(String(200))
    client: Mapped[str] = mapped_column(String(64))
    failed_at: Mapped[datetime] = mapped_column(default=utcnow)


class ErasureTombstone(Base):
    """An erased message's channel and provider id, hashed (SHA-256), kept until `expires_at`
    (the providers' longest retry window): a provider's late retry of that message is
    acknowledged and dropped instead of stored again. Nothing else of the message or its
    customer is kept."""

    __tablename__ = "erasure_tombstones"

    key_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class IdempotencyKey(Base):
    """A client's `Idempotency-Key` on one route: claimed while the request runs, then the
    response it produced, replayed to retries of the same request for 24 hours."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("key", "method", "path", name="uq_idempotency_keys_scope"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(255))
    method: Mapped[str] = mapped_column(String(16))
    path: Mapped[str] = mapped_column(String(1024))
    # SHA-256 (hex) of the method, path, query string and body.
    fingerprint: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="in_progress")
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)
    content_type: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    locked_until: Mapped[datetime]


class TenantConfig(Base):
    """Context settings at one level of the lookup: domain, host or assistant."""

    __tablename__ = "tenant_configs"
    __table_args__ = (UniqueConstraint("domain", "host", "assistant_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    domain: Mapped[str] = mapped_column(String(200))
    host: Mapped[str | None] = mapped_column(String(200))
    assistant_id: Mapped[str | None] = mapped_column(String(200))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


# The references that erasure and retention delete through: without an index, each deleted
# parent row makes the database scan the referencing table. Partial (only rows that refer), so
# the common rows that refer to nothing cost no index entry.
REFERENCE_INDEXES: tuple[tuple[str, str, bool], ...] = (
    # (table, column, partial)
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


def reference_index_name(table: str, column: str) -> str:
    return f"ix_{table}_{column}_ref"


for _table, _column, _partial in REFERENCE_INDEXES:
    _where = sql_text(f"{_column} IS NOT NULL") if _partial else None
    Index(
        reference_index_name(_table, _column),
        Base.metadata.tables[_table].c[_column],
        postgresql_where=_where,
        sqlite_where=_where,
    )


class ImmutableRowError(Exception):
    """Raised when code tries to update a raw message in place, or to delete one outside an
    erasure."""


@event.listens_for(Message, "before_update")
def _refuse_message_update(mapper: Mapper[Any], connection: Any, target: Message) -> None:
    raise ImmutableRowError(f"message {target.id} is immutable; write a new version instead")


@event.listens_for(Message, "before_delete")
def _refuse_message_delete(mapper: Mapper[Any], connection: Any, target: Message) -> None:
    # Raw messages are kept; only an erasure (a data subject's request, an operator removing
    # a mistake, retention) deletes them, by set-based statements that this guard does not
    # see: `repositories.erasure` and `repositories.message_erasure`.
    raise ImmutableRowError(
        f"message {target.id} is kept; erase it with repositories.message_erasure instead"
    )


# Tables kept in modules of their own join the metadata here.
from gateway.storage.models_actions import ActionConfirmation as ActionConfirmation  # noqa: E402
from gateway.storage.models_actions import (  # noqa: E402
    IdentityVerification as IdentityVerification,
)
from gateway.storage.models_csat import CsatSurvey as CsatSurvey  # noqa: E402
from gateway.storage.models_embeddings import Embedding as Embedding  # noqa: E402
from gateway.storage.models_inbox import ConversationAssignment as ConversationAssignment  # noqa: E402
from gateway.storage.models_inbox import ConversationRead as ConversationRead  # noqa: E402
from gateway.storage.models_knowledge import KnowledgeChunk as KnowledgeChunk  # noqa: E402
from gateway.storage.models_knowledge import (  # noqa: E402
    KnowledgeDocument as KnowledgeDocument,
)
from gateway.storage.models_notes import ConversationNote as ConversationNote  # noqa: E402
