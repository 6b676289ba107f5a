"""Identity rules: who is writing, how sure we are, and what they may see.

Pure functions and immutable values, no I/O. The gateway composes them per inbound message::

    claims = verify_identity_token(token, secret)                 # web chat only
    observation = observe(WebChatVisitor(visitor_id, claims), stated=phones_and_emails)
    view = GraphSnapshot.from_rows(...)                            # rows named by lookups_for()
    resolution = resolve(observation, view, limits=..., blocked=...)
    scopes = policy.allowed_scopes(resolution.level, channel)

and, for operators, `plan_merge` / `plan_split` whose moves and audit entry it persists.
`MemoryGraph` is the in-memory reference for storing all of the above.
"""

from __future__ import annotations

from identity.blocked import DEFAULT_BLOCKED, DEFAULT_BLOCKED_TOKENS, BlockedValues
from identity.channels import (
    CHANNEL_NAMES,
    ChannelName,
    IdentityChannel,
    channel_name,
    identity_channel,
)
from identity.errors import (
    IdentityConfigError,
    IdentityError,
    InvalidIdentifier,
    OwnershipConflict,
)
from identity.evidence import (
    Evidence,
    IdentityObservation,
    PhoneCall,
    TelegramContactShare,
    TelegramSender,
    WebChatVisitor,
    WhatsAppSender,
    observe,
)
from identity.graph import (
    GraphLookups,
    GraphSnapshot,
    Holding,
    IdentityGraphView,
    IdentityLink,
    lookups_for,
)
from identity.levels import LinkLevel, at_least, strongest, weakest
from identity.memory_graph import IDENTIFIER_RECORD, MemoryGraph
from identity.normalize import (
    DEFAULT_REGION,
    Channel,
    ChannelIdentityKey,
    Identifier,
    IdentifierKind,
    NormalizedEmail,
    channel_identity_key,
    decimal_id,
    normalize_email,
    normalize_identifier,
    normalize_opaque_id,
    normalize_phone,
    normalize_telegram_id,
    read_email,
    stated_identifier,
)
from identity.ownership import (
    IDENTITY_RECORD,
    AuditEntry,
    Move,
    OwnedRecord,
    OwnershipPlan,
    apply_plan,
    identity_keys_of,
    plan_merge,
    plan_split,
)
from identity.policy import ALL_SCOPES, DEFAULT_SCOPES, ScopedFact, ScopePolicy
from identity.resolution import (
    DEFAULT_LIMITS,
    IdentifierLink,
    LinkLimits,
    NamedCustomerPolicy,
    Outcome,
    PendingLink,
    PendingReason,
    Resolution,
    resolve,
)
from identity.webtoken import (
    MIN_SECRET_BYTES,
    WebClaims,
    check_webchat_secret,
    verify_identity_token,
)

__all__ = [
    "ALL_SCOPES",
    "DEFAULT_BLOCKED",
    "DEFAULT_BLOCKED_TOKENS",
    "DEFAULT_LIMITS",
    "DEFAULT_REGION",
    "DEFAULT_SCOPES",
    "IDENTIFIER_RECORD",
    "IDENTITY_RECORD",
    "MIN_SECRET_BYTES",
    "AuditEntry",
    "BlockedValues",
    "CHANNEL_NAMES",
    "Channel",
    "ChannelName",
    "IdentityChannel",
    "ChannelIdentityKey",
    "Evidence",
    "GraphLookups",
    "GraphSnapshot",
    "Holding",
    "IdentifierKind",
    "IdentifierLink",
    "Identifier",
    "IdentityConfigError",
    "IdentityError",
    "IdentityGraphView",
    "IdentityLink",
    "IdentityObservation",
    "InvalidIdentifier",
    "LinkLevel",
    "LinkLimits",
    "MemoryGraph",
    "Move",
    "NamedCustomerPolicy",
    "NormalizedEmail",
    "Outcome",
    "OwnedRecord",
    "OwnershipConflict",
    "OwnershipPlan",
    "PendingLink",
    "PendingReason",
    "PhoneCall",
    "Resolution",
    "ScopePolicy",
    "ScopedFact",
    "TelegramContactShare",
    "TelegramSender",
    "WebChatVisitor",
    "WebClaims",
    "WhatsAppSender",
    "apply_plan",
    "at_least",
    "channel_identity_key",
    "channel_name",
    "check_webchat_secret",
    "identity_keys_of",
    "lookups_for",
    "normalize_email",
    "normalize_identifier",
    "normalize_opaque_id",
    "normalize_phone",
    "decimal_id",
    "identity_channel",
    "normalize_telegram_id",
    "observe",
    "plan_merge",
    "plan_split",
    "read_email",
    "resolve",
    "stated_identifier",
    "strongest",
    "verify_identity_token",
    "weakest",
]
