"""Operator identity actions on storage: merge, split, confirm or reject a pending link.

The plans come from `identity.plan_merge` / `identity.plan_split` (pure); this module loads the
owned records, applies the moves in one transaction and writes the audit entry with them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.models import (
    ChannelIdentity,
    CompactionTrace,
    Customer,
    CustomerIdentifier,
    Episode,
    EpisodeSummary,
    Fact,
    Message,
)
from gateway.storage.models import PendingLink as PendingLinkRow
from gateway.storage.records import AuditRecord, PendingLinkRecord
from gateway.storage.repositories import audit, customers
from identity import (
    IDENTITY_RECORD,
    ChannelIdentityKey,
    LinkLevel,
    OwnedRecord,
    OwnershipConflict,
    OwnershipPlan,
    plan_merge,
    plan_split,
)

# Record kind → (table, primary key column, column naming the source identity).
_OWNED: dict[str, tuple[Any, Any, Any]] = {
    IDENTITY_RECORD: (ChannelIdentity, ChannelIdentity.id, ChannelIdentity.id),
    "identifier": (
        CustomerIdentifier,
        CustomerIdentifier.id,
        CustomerIdentifier.source_identity_id,
    ),
    "episode": (Episode, Episode.id, Episode.identity_id),
    "message": (Message, Message.id, Message.identity_id),
    "fact": (Fact, Fact.id, Fact.source_identity_id),
}


async def owned_records(session: AsyncSession, customer_id: str) -> list[OwnedRecord]:
    """Every record of the customer with the channel identity it came from."""
    require_customer(customer_id)
    keys = {
        row.id: ChannelIdentityKey.parse(row.external_id)
        for row in await session.scalars(
            select(ChannelIdentity).where(ChannelIdentity.customer_id == customer_id)
        )
    }
    # Records may come from identities that were moved away earlier; resolve those too.
    records: list[OwnedRecord] = []
    for kind, (table, pk, source) in _OWNED.items():
        rows = await session.execute(select(pk, source).where(table.customer_id == customer_id))
        for record_id, source_id in rows:
            if source_id is None:
                continue
            key = keys.get(source_id) or await _key_of(session, source_id)
            if key is not None:
                records.append(OwnedRecord(kind, str(record_id), customer_id, key))
    return records


async def _key_of(session: AsyncSession, identity_id: str) -> ChannelIdentityKey | None:
    row = await session.get(ChannelIdentity, identity_id)
    return ChannelIdentityKey.parse(row.external_id) if row else None


async def _apply(session: AsyncSession, plan: OwnershipPlan) -> None:
    by_kind: dict[str, list[str]] = defaultdict(list)
    for move in plan.moves:
        by_kind[move.kind].append(move.record_id)
    for kind, ids in by_kind.items():
        table, pk, _ = _OWNED[kind]
        typed_ids: list[Any] = (
            [int(i) for i in ids] if kind in {"identifier", "message", "fact"} else ids
        )
        to_customer = plan.audit.to_customer
        for start in range(0, len(typed_ids), 500):
            await session.execute(
                update(table)
                .where(pk.in_(typed_ids[start : start + 500]))
                .values(customer_id=to_customer)
            )
    # Derived rows follow their episode.
    moved_episodes = by_kind.get("episode", [])
    for start in range(0, len(moved_episodes), 500):
        chunk = moved_episodes[start : start + 500]
        for derived in (EpisodeSummary, CompactionTrace):
            await session.execute(
                update(derived)
                .where(derived.episode_id.in_(chunk))
                .values(customer_id=plan.audit.to_customer)
            )
    await session.flush()


async def _write_audit(session: AsyncSession, plan: OwnershipPlan, subject: str) -> AuditRecord:
    entry = plan.audit
    return await audit.record_audit(
        session,
        actor=entry.actor,
        action=entry.action,
        reason=entry.reason,
        subject_type="customer",
        subject_id=subject,
        details={
            "from_customer": entry.from_customer,
            "to_customer": entry.to_customer,
            "identities": [str(key) for key in entry.identity_keys],
            "moved": [list(pair) for pair in entry.moved],
        },
    )


async def merge_customers(
    session: AsyncSession, source_customer: str, target_customer: str, *, actor: str, reason: str
) -> AuditRecord:
    """Move everything of `source_customer` to `target_customer`; the source is marked merged."""
    await customers.get_customer(session, target_customer)
    source = await session.get(Customer, require_customer(source_customer))
    if source is None:
        raise RecordNotFound(f"customer {source_customer} not found")
    plan = plan_merge(
        source_customer,
        target_customer,
        await owned_records(session, source_customer),
        actor=actor,
        reason=reason,
    )
    await _apply(session, plan)
    source.merged_into = target_customer
    await _retarget_pending(session, source_customer, target_customer)
    return await _write_audit(session, plan, target_customer)


async def _retarget_pending(session: AsyncSession, source: str, target: str) -> None:
    """Proposals toward the merged-away customer now concern the target; the ones the merge
    itself fulfilled (identity and candidate now the same customer) are closed."""
    await session.execute(
        update(PendingLinkRow)
        .where(PendingLinkRow.target_customer_id == source, PendingLinkRow.status == "pending")
        .values(target_customer_id=target)
    )
    own = select(ChannelIdentity.id).where(ChannelIdentity.customer_id == target)
    await session.execute(
        update(PendingLinkRow)
        .where(
            PendingLinkRow.target_customer_id == target,
            PendingLinkRow.status == "pending",
            PendingLinkRow.identity_id.in_(own),
        )
        .values(status="satisfied", decided_at=utcnow(), decided_by="merge")
    )


async def split_customer(
    session: AsyncSession,
    customer_id: str,
    identity_external_ids: list[str],
    *,
    actor: str,
    reason: str,
) -> tuple[str, AuditRecord]:
    """Move the named identities and everything they are the source of to a new customer."""
    await customers.get_customer(session, customer_id)
    try:
        keys = [ChannelIdentityKey.parse(external_id) for external_id in identity_external_ids]
    except ValueError as exc:
        raise OwnershipConflict(f"not an identity of this customer: {exc}") from exc
    records = await owned_records(session, customer_id)
    new_customer = await customers.create_customer(session)
    plan = plan_split(customer_id, keys, new_customer.id, records, actor=actor, reason=reason)
    await _apply(session, plan)
    return new_customer.id, await _write_audit(session, plan, customer_id)


def pending_record(row: PendingLinkRow) -> PendingLinkRecord:
    return PendingLinkRecord(
        id=row.id,
        identity_id=row.identity_id,
        target_customer_id=row.target_customer_id,
        identifier_kind=row.identifier_kind,
        identifier_value=row.identifier_value,
        claimed_level=row.claimed_level,
        reason=row.reason,
        status=row.status,
        created_at=row.created_at,
        decided_at=row.decided_at,
        decided_by=row.decided_by,
    )


async def list_pending_links(
    session: AsyncSession, *, customer_id: str | None = None
) -> list[PendingLinkRecord]:
    query = select(PendingLinkRow).where(PendingLinkRow.status == "pending")
    if customer_id is not None:
        identity_ids = select(ChannelIdentity.id).where(ChannelIdentity.customer_id == customer_id)
        query = query.where(
            (PendingLinkRow.target_customer_id == customer_id)
            | PendingLinkRow.identity_id.in_(identity_ids)
        )
    rows = await session.scalars(query.order_by(PendingLinkRow.created_at, PendingLinkRow.id))
    return [pending_record(row) for row in rows]


async def _pending(session: AsyncSession, link_id: str) -> PendingLinkRow:
    row = await session.get(PendingLinkRow, link_id)
    if row is None or row.status != "pending":
        raise RecordNotFound(f"pending link {link_id} not found")
    return row


async def confirm_pending_link(
    session: AsyncSession, link_id: str, *, actor: str, reason: str
) -> AuditRecord:
    """An operator confirms: the identity's customer merges into the candidate and the
    identity becomes verified (operator confirmation is verifying evidence)."""
    row = await _pending(session, link_id)
    identity = await session.get(ChannelIdentity, row.identity_id)
    if identity is None:
        raise RecordNotFound("the pending link's identity is gone")
    details: dict[str, Any] = {"pending_link": row.id, "identity": identity.external_id}
    if identity.customer_id != row.target_customer_id:
        merged = await merge_customers(
            session, identity.customer_id, row.target_customer_id, actor=actor, reason=reason
        )
        details["merge_audit_id"] = merged.id
    identity.link_level = LinkLevel.VERIFIED.value
    identity.evidence = {
        "description": f"operator confirmation by {actor}",
        "level": LinkLevel.VERIFIED.value,
    }
    await session.execute(
        update(CustomerIdentifier)
        .where(
            CustomerIdentifier.customer_id == row.target_customer_id,
            CustomerIdentifier.kind == row.identifier_kind,
            CustomerIdentifier.value == row.identifier_value,
        )
        .values(link_level=LinkLevel.VERIFIED.value)
    )
    _decide(row, "confirmed", actor)
    return await audit.record_audit(
        session,
        actor=actor,
        action="confirm_link",
        reason=reason,
        subject_type="customer",
        subject_id=row.target_customer_id,
        details=details,
    )


async def reject_pending_link(
    session: AsyncSession, link_id: str, *, actor: str, reason: str
) -> AuditRecord:
    row = await _pending(session, link_id)
    _decide(row, "rejected", actor)
    return await audit.record_audit(
        session,
        actor=actor,
        action="reject_link",
        reason=reason,
        subject_type="customer",
        subject_id=row.target_customer_id,
        details={"pending_link": row.id},
    )


def _decide(row: PendingLinkRow, status: str, actor: str) -> None:
    row.status = status
    row.decided_at = utcnow()
    row.decided_by = actor
