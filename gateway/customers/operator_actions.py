"""Operator identity actions on storage: merge, split, confirm or reject a pending link.

The plans come from `identity.plan_merge` / `identity.plan_split` (pure); this module loads the
owned records, applies the moves in one transaction and writes the audit entry with them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.records import AuditRecord, PendingLinkRecord
from gateway.storage.repositories import audit, customers, ownership, pending_links
from identity import (
    ChannelIdentityKey,
    LinkLevel,
    OwnedRecord,
    OwnershipConflict,
    OwnershipPlan,
    plan_merge,
    plan_split,
)


async def owned_records(session: AsyncSession, customer_id: str) -> list[OwnedRecord]:
    """Every record of the customer with the channel identity it came from."""
    require_customer(customer_id)
    keys = {
        identity.id: ChannelIdentityKey.parse(identity.external_id)
        for identity in await customers.list_identities(session, customer_id)
    }
    # Records may come from identities that were moved away earlier; resolve those too.
    records: list[OwnedRecord] = []
    for sourced in await ownership.sourced_records(session, customer_id):
        source_id = sourced.source_identity_id
        key = keys.get(source_id) or await _key_of(session, source_id)
        if key is not None:
            records.append(OwnedRecord(sourced.kind, sourced.record_id, customer_id, key))
    return records


async def _key_of(session: AsyncSession, identity_id: str) -> ChannelIdentityKey | None:
    identity = await customers.find_identity_by_id(session, identity_id)
    return ChannelIdentityKey.parse(identity.external_id) if identity else None


async def _apply(session: AsyncSession, plan: OwnershipPlan) -> None:
    by_kind: dict[str, list[str]] = defaultdict(list)
    for move in plan.moves:
        by_kind[move.kind].append(move.record_id)
    await ownership.reassign(session, by_kind, plan.audit.to_customer)


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
    await customers.get_customer(session, source_customer)
    plan = plan_merge(
        source_customer,
        target_customer,
        await owned_records(session, source_customer),
        actor=actor,
        reason=reason,
    )
    await _apply(session, plan)
    await customers.mark_merged(session, source_customer, target_customer)
    await pending_links.retarget_pending(session, source_customer, target_customer)
    return await _write_audit(session, plan, target_customer)


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


async def list_pending_links(
    session: AsyncSession, *, customer_id: str | None = None
) -> list[PendingLinkRecord]:
    return await pending_links.list_pending(session, customer_id=customer_id)


async def confirm_pending_link(
    session: AsyncSession, link_id: str, *, actor: str, reason: str
) -> AuditRecord:
    """An operator confirms: the identity's customer merges into the candidate and the
    identity becomes verified (operator confirmation is verifying evidence)."""
    link = await pending_links.get_pending(session, link_id)
    identity = await customers.find_identity_by_id(session, link.identity_id)
    if identity is None:
        raise RecordNotFound("the pending link's identity is gone")
    details: dict[str, Any] = {"pending_link": link.id, "identity": identity.external_id}
    if identity.customer_id != link.target_customer_id:
        merged = await merge_customers(
            session, identity.customer_id, link.target_customer_id, actor=actor, reason=reason
        )
        details["merge_audit_id"] = merged.id
    await customers.update_identity(
        session,
        identity.id,
        link_level=LinkLevel.VERIFIED.value,
        evidence={
            "description": f"operator confirmation by {actor}",
            "level": LinkLevel.VERIFIED.value,
        },
    )
    await customers.set_identifier_level(
        session,
        customer_id=link.target_customer_id,
        kind=link.identifier_kind,
        value=link.identifier_value,
        link_level=LinkLevel.VERIFIED.value,
    )
    await pending_links.decide(session, link.id, status="confirmed", actor=actor)
    return await audit.record_audit(
        session,
        actor=actor,
        action="confirm_link",
        reason=reason,
        subject_type="customer",
        subject_id=link.target_customer_id,
        details=details,
    )


async def reject_pending_link(
    session: AsyncSession, link_id: str, *, actor: str, reason: str
) -> AuditRecord:
    link = await pending_links.get_pending(session, link_id)
    await pending_links.decide(session, link.id, status="rejected", actor=actor)
    return await audit.record_audit(
        session,
        actor=actor,
        action="reject_link",
        reason=reason,
        subject_type="customer",
        subject_id=link.target_customer_id,
        details={"pending_link": link.id},
    )
