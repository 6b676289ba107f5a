"""What the console reads and changes, on a session the caller owns.

Fact corrections. A fact must be sourced to a stored message, so an operator's correction
first writes an *operator note*: a message with role ``operator`` on channel ``console`` in
the customer's ``console`` episode (one per customer, opened on first use), holding the new
value and the reason. The corrected fact is a new row sourced to that note, confirmed, with
confidence 1.0 and pinned (an operator's decision: a memory rebuild keeps it; unpin it to
hand the key back to compaction); the old row is marked superseded by it, so the history
keeps both. Operator notes are neither turns of a window nor input to compaction (those read
only user and assistant messages).

Every action writes an audit entry with the operator's username and the reason.

Refusals are `gateway.console.errors.Invalid` (with a code such as `reason_required`); rows
that are not there, or not this customer's, raise the storage layer's `RecordNotFound`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.ext.asyncio import AsyncSession

from context import TokenCounter
from gateway.console.errors import Invalid
from gateway.customers.resolve import ResolvedIdentity, rules_for
from gateway.storage.errors import RecordNotFound
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import (
    AuditRecord,
    ChannelIdentityRecord,
    FactRecord,
    MessageRecord,
    NewFact,
    NewMessage,
)
from gateway.storage.repositories import (
    audit,
    customers,
    episodes,
    facts,
    inbox,
    messages,
    profiles,
    tenants,
)
from gateway.turns.window import AssembledContext, assemble_context
from identity import ChannelIdentityKey, LinkLevel

CONSOLE_CHANNEL = "console"
OPERATOR_ROLE = "operator"
SEARCH_LIMIT = 50


@dataclass(frozen=True, slots=True)
class SearchHit:
    customer_id: str
    display_name: str | None
    identities: tuple[str, ...]


async def search_customers(session: AsyncSession, query: str) -> list[SearchHit]:
    """Customers (not merged away) whose id, name, identity or identifier matches `query`.

    Phone numbers match on their digits, so "+55 11 99876-5432" finds "whatsapp:+5511998765432".
    """
    rows = await profiles.search_customers(session, query, limit=SEARCH_LIMIT)
    hits: list[SearchHit] = []
    for row in rows:
        owned = await customers.list_identities(session, row.id)
        hits.append(SearchHit(row.id, row.display_name, tuple(i.external_id for i in owned)))
    return hits


async def all_facts(session: AsyncSession, customer_id: str) -> list[FactRecord]:
    """Every fact row of the customer, current and superseded, oldest first."""
    return await profiles.all_facts(session, customer_id)


def _reason(reason: str) -> str:
    cleaned = reason.strip()
    if not cleaned:
        raise Invalid("a reason is required", code="reason_required")
    return cleaned[:2000]


async def console_episode(session: AsyncSession, customer_id: str) -> str:
    found = await profiles.first_episode_id(session, customer_id, CONSOLE_CHANNEL)
    if found is not None:
        return found
    opened = await episodes.open_episode(session, customer_id=customer_id, channel=CONSOLE_CHANNEL)
    return opened.id


async def operator_note(
    session: AsyncSession,
    counter: TokenCounter,
    customer_id: str,
    text: str,
    *,
    actor: str,
    action: str,
) -> MessageRecord:
    """Store an operator note in the customer's console episode (the source of what the
    operator asserted)."""
    episode_id = await console_episode(session, customer_id)
    return await messages.append_message(
        session,
        NewMessage(
            customer_id=customer_id,
            episode_id=episode_id,
            channel=CONSOLE_CHANNEL,
            role=OPERATOR_ROLE,
            text=text,
            token_count=counter.count(text),
            meta=MessageMeta(operator=actor, action=action),
        ),
    )


async def correct_fact(
    session: AsyncSession,
    counter: TokenCounter,
    customer_id: str,
    fact_id: int,
    value: str,
    *,
    actor: str,
    reason: str,
) -> tuple[FactRecord, AuditRecord]:
    """Supersede a current fact with the operator's value, sourced to an operator note."""
    why = _reason(reason)
    value = value.strip()
    if not value:
        raise Invalid("the corrected value is empty", code="value_required")
    old = await profiles.fact_by_id(session, customer_id, fact_id)
    if not old.is_current:
        raise Invalid("only a current fact can be corrected", code="fact_not_current")
    if value == old.value:
        raise Invalid("the corrected value equals the current one", code="value_unchanged")
    note = await operator_note(
        session,
        counter,
        customer_id,
        f"Operator {actor} corrected {old.key}: {old.value!r} -> {value!r}. Reason: {why}",
        actor=actor,
        action="correct_fact",
    )
    tags = tuple(dict.fromkeys((*old.tags, "operator")))
    new = await facts.record_fact(
        session,
        customer_id,
        NewFact(
            key=old.key,
            value=value,
            scope=old.scope,
            source_message_id=note.id,
            tags=tags,
            confidence=1.0,
            confirmed=True,
            pinned=True,
        ),
        single_valued=False,
    )
    if new.id == old.id:  # cannot happen (values differ), kept as a guard
        raise Invalid("the corrected value equals the current one", code="value_unchanged")
    await profiles.supersede_fact(session, old.id, new.id)
    entry = await audit.record_audit(
        session,
        actor=actor,
        action="correct_fact",
        reason=why,
        subject_type="customer",
        subject_id=customer_id,
        details={
            "fact": old.id,
            "key": old.key,
            "old_value": old.value,
            "new_fact": new.id,
            "new_value": value,
            "note_message": note.id,
        },
    )
    return new, entry


async def set_fact_state(
    session: AsyncSession,
    customer_id: str,
    fact_id: int,
    change: str,
    *,
    actor: str,
    reason: str,
) -> tuple[FactRecord, AuditRecord]:
    """`change` is one of "pin", "unpin", "retract"."""
    why = _reason(reason)
    old = await profiles.fact_by_id(session, customer_id, fact_id)
    if change == "pin":
        updated = await facts.set_pinned(session, customer_id, fact_id, True)
    elif change == "unpin":
        updated = await facts.set_pinned(session, customer_id, fact_id, False)
    elif change == "retract":
        if not old.is_current:
            raise Invalid("only a current fact can be retracted", code="fact_not_current")
        updated = await facts.retract_fact(session, customer_id, fact_id)
    else:
        raise Invalid(f"unknown fact change {change!r}")
    entry = await audit.record_audit(
        session,
        actor=actor,
        action=f"{change}_fact",
        reason=why,
        subject_type="customer",
        subject_id=customer_id,
        details={"fact": fact_id, "key": old.key, "value": old.value},
    )
    return updated, entry


async def audit_rebuild(
    session: AsyncSession, customer_id: str, *, actor: str, reason: str, result: dict[str, Any]
) -> AuditRecord:
    return await audit.record_audit(
        session,
        actor=actor,
        action="rebuild_memory",
        reason=_reason(reason),
        subject_type="customer",
        subject_id=customer_id,
        details=result,
    )


async def retry_set_aside(
    session: AsyncSession, item_id: int, *, actor: str, reason: str
) -> AuditRecord:
    """Put a set-aside inbox row back in line and audit it, in the caller's transaction."""
    reason = _reason(reason)
    item = await inbox.retry(session, item_id)
    if item is None:
        raise RecordNotFound("no such message is set aside")
    return await audit.record_audit(
        session,
        actor=actor,
        action="retry_inbox_message",
        reason=reason,
        subject_type="inbox_message",
        subject_id=str(item_id),
        details={
            "channel": item.channel,
            "provider_message_id": item.provider_message_id,
            "attempts": item.attempts,
            "error": item.error[:200],
        },
    )


def check_reason(reason: str) -> str:
    return _reason(reason)


async def preview_identity(
    session: AsyncSession, customer_id: str, identity_id: str, *, host: str, region: str | None
) -> tuple[ChannelIdentityRecord, ResolvedIdentity]:
    """The identity as it would resolve now: its stored link level and the tenant's scopes."""
    record = await customers.identity_by_id(session, identity_id)
    if record.customer_id != customer_id:
        raise RecordNotFound(f"identity {identity_id} is not this customer's")
    key = ChannelIdentityKey.parse(record.external_id)
    tenant = await tenants.tenant_settings(session, host=host, channel=key.channel)
    policy = rules_for(tenant, region).policy
    level = LinkLevel.parse(record.link_level)
    return record, ResolvedIdentity(
        customer_id=customer_id,
        identity_id=record.id,
        key=key,
        level=level,
        allowed_scopes=policy.allowed_scopes(level, key.channel),
        outcome="known",
        pending_links=0,
        own_facts_only=level in policy.own_facts_only,
    )


async def preview_context(
    session: AsyncSession,
    counter: TokenCounter,
    identity: ResolvedIdentity,
    message: str,
    *,
    host: str,
) -> AssembledContext:
    """The window that would be sent for `message` from `identity` (nothing is stored)."""
    tenant = await tenants.tenant_settings(session, host=host, channel=identity.key.channel)
    return await assemble_context(
        session, identity=identity, settings=tenant, counter=counter, message=message
    )


def as_dict(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}
