"""Frozen records returned by the repositories; ORM rows never leave the storage layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from channels.base import Media
from gateway.storage.message_meta import MessageMeta
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef


@dataclass(frozen=True, slots=True)
class CustomerRecord:
    id: str
    display_name: str | None
    locale: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ChannelIdentityRecord:
    id: str
    channel: str
    external_id: str
    customer_id: str
    link_level: str
    evidence: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class IdentifierRecord:
    id: int
    customer_id: str
    kind: str
    value: str
    link_level: str
    source_identity_id: str | None


@dataclass(frozen=True, slots=True)
class PendingLinkRecord:
    id: str
    identity_id: str
    target_customer_id: str
    identifier_kind: str
    identifier_value: str
    claimed_level: str
    reason: str
    status: str
    created_at: datetime
    decided_at: datetime | None
    decided_by: str | None


@dataclass(frozen=True, slots=True)
class SourcedRecord:
    """A record a customer owns (`kind`: identity, identifier, episode, message or fact) and
    the channel identity it came from; an identity is its own source."""

    kind: str
    record_id: str
    source_identity_id: str


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    id: str
    customer_id: str
    channel: str
    identity_id: str | None
    external_ref: str | None
    campaign_id: str | None
    status: str
    version: int
    transcript_confidence: float | None
    started_at: datetime
    last_message_at: datetime
    ended_at: datetime | None
    token_total: int = 0  # the stored token counts of its messages, summed at ingest
    tenant: TenantRef = DEFAULT_TENANT  # the tenant it entered through


@dataclass(frozen=True, slots=True)
class SenderSnapshot:
    """A user message's sender as the message arrived: the channel's own id for them (where the
    reply goes) and what their evidence then let the answer's window see."""

    sender: str
    link_level: str
    allowed_scopes: tuple[str, ...]
    own_facts_only: bool


@dataclass(frozen=True, slots=True)
class MessageRecord:
    id: int
    customer_id: str
    episode_id: str
    identity_id: str | None
    channel: str
    role: str
    text: str
    provider_message_id: str | None
    token_count: int
    transcript_confidence: float | None
    redacted: bool
    supersedes_id: int | None
    created_at: datetime
    words: dict[str, Any] | None = None
    media: tuple[Media, ...] = ()
    meta: MessageMeta = MessageMeta()
    thread_key: str | None = None
    sender: SenderSnapshot | None = None
    tenant: TenantRef = DEFAULT_TENANT  # the tenant it entered through


@dataclass(frozen=True, slots=True)
class TurnLine:
    """The columns of a stored turn that recall reads (no words, media or provider extras)."""

    id: int
    episode_id: str
    role: str
    text: str
    created_at: datetime
    supersedes_id: int | None
    speaker: str | None


@dataclass(frozen=True, slots=True)
class WindowLine:
    """The columns of a stored message that a window's current episode reads (no words, media
    or provider extras, which cost a JSON decode per row and turn)."""

    id: int
    role: str
    text: str
    token_count: int
    channel: str
    created_at: datetime
    transcript_confidence: float | None
    supersedes_id: int | None
    canned: bool = False  # `MessageMeta.canned`: no memory, no compaction
    human_agent: str | None = None  # the operator who wrote it (`MessageMeta.actor`)


@dataclass(frozen=True, slots=True)
class WindowState:
    """A conversation's WhatsApp customer-service window as stored: the customer's last inbound
    message and when the provider last said the window was closed."""

    last_inbound_at: datetime | None
    closed_at: datetime | None


@dataclass(frozen=True, slots=True)
class PendingTurn:
    """A turn to answer, with its inbound message and the key of the identity that sent it
    (None for a message stored without one)."""

    turn: TurnRecord
    inbound: MessageRecord
    identity_key: str | None
    owner: str = "bot"  # who answers the conversation (`identity.conversation_owner.Owner`)
    # Read with the turn (None: the conversation has no row): its reply needs no read of it.
    window: WindowState | None = None


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A pending turn to create for a stored inbound message."""

    inbound_message_id: int
    customer_id: str
    episode_id: str
    conversation_key: str
    tenant: TenantRef = DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class NewMessage:
    """What the pipeline hands to storage; the token count is computed once, before this."""

    customer_id: str
    episode_id: str
    channel: str
    role: str
    text: str
    token_count: int
    identity_id: str | None = None
    provider_message_id: str | None = None
    transcript_confidence: float | None = None
    words: dict[str, Any] | None = None
    media: tuple[Media, ...] = ()
    meta: MessageMeta = MessageMeta()
    supersedes_id: int | None = None
    redacted: bool = False
    created_at: datetime | None = None
    thread_key: str | None = None
    sender: SenderSnapshot | None = None
    tenant: TenantRef = DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class FactRecord:
    id: int
    customer_id: str
    key: str
    value: str
    scope: str
    tags: tuple[str, ...]
    source_message_id: int
    source_channel: str
    source_episode_id: str
    source_identity_id: str | None
    confidence: float
    confirmed: bool
    confirmed_at: datetime | None
    confirmed_by_message_id: int | None
    pinned: bool
    retracted: bool
    superseded_by: int | None
    created_at: datetime

    @property
    def is_current(self) -> bool:
        return self.superseded_by is None and not self.retracted


@dataclass(frozen=True, slots=True)
class NewFact:
    key: str
    value: str
    scope: str
    source_message_id: int
    tags: tuple[str, ...] = ()
    confidence: float = 1.0
    confirmed: bool = False
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class SummaryRecord:
    episode_id: str
    customer_id: str
    summary: str
    last_message_id: int
    origin_channel: str
    transcript_confidence: float | None
    token_count: int
    updated_at: datetime
    period_start: datetime | None = None
    period_end: datetime | None = None
    sentences: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class CompactionTraceRecord:
    id: int
    customer_id: str
    episode_id: str | None
    compactor: str
    model: str | None
    facts_before: dict[str, Any]
    facts_after: dict[str, Any]
    summary_before: str | None
    summary_after: str | None
    tokens_in: int
    tokens_out: int
    duration_ms: int
    error: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class CampaignRecord:
    id: str
    name: str
    variables: dict[str, Any]
    deleted: bool
    expire_at: date | None
    created_at: datetime
    anchored: tuple[AnchoredMessageRecord, ...] = field(default=())

    def is_active(self, today: date) -> bool:
        return not self.deleted and (self.expire_at is None or self.expire_at >= today)


@dataclass(frozen=True, slots=True)
class AnchoredMessageRecord:
    id: int
    campaign_id: str
    position: int
    text: str


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: int
    actor: str
    action: str
    reason: str
    subject_type: str
    subject_id: str
    details: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class IdempotencyRecord:
    """A client's `Idempotency-Key` on one route: in progress, or done with its response."""

    id: int
    key: str
    method: str
    path: str
    fingerprint: str
    status: str
    response_status: int | None
    response_body: str | None
    content_type: str | None
    created_at: datetime
    locked_until: datetime


@dataclass(frozen=True, slots=True)
class TurnRecord:
    id: int
    inbound_message_id: int
    customer_id: str
    episode_id: str
    conversation_key: str
    status: str
    reply_message_id: int | None
    provider: str | None
    model: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    attempts: int
    report: dict[str, Any] | None
    error: str | None
    delivery_status: str | None
    delivery_attempts: int = 0
    tenant: TenantRef = DEFAULT_TENANT  # the tenant it entered through
    delivery_lease_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class OutboundRecord:
    """One message a provider accepted from us, and the delivery status last reported."""

    id: int
    channel: str
    provider_message_id: str
    turn_id: int | None
    reply_message_id: int | None
    part: int
    status: str
    error_code: str | None


@dataclass(frozen=True, slots=True)
class InboxDepth:
    """How much of the inbox is not stored yet: rows waiting (claimed or not), the oldest one's
    arrival, and rows set aside after failing again and again."""

    waiting: int
    oldest_waiting: datetime | None
    set_aside: int


@dataclass(frozen=True, slots=True)
class SetAsideItem:
    """An inbox row set aside after `attempts` failures, for an operator to see and retry."""

    id: int
    channel: str
    provider_message_id: str
    thread_key: str
    received_at: datetime
    set_aside_at: datetime
    attempts: int
    error: str
    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class InboxItem:
    """A claimed inbox row: a parsed provider message waiting to be stored."""

    id: int
    thread_key: str
    tenant: TenantRef
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """One customer on one channel identity and who answers it (see `Conversation`)."""

    id: str
    conversation_key: str
    customer_id: str
    channel: str
    identity_id: str | None
    external_id: str
    owner: str
    held_by: str | None
    owner_since: datetime
    last_message_at: datetime
    created_at: datetime
    # WhatsApp's customer-service window (`identity.service_window`).
    last_inbound_at: datetime | None = None
    window_closed_at: datetime | None = None
    tenant: TenantRef = DEFAULT_TENANT  # the tenant it entered through
