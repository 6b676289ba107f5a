"""Pending links: proposed links that only an operator (or a later verification) may confirm."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.models import ChannelIdentity, PendingLink
from gateway.storage.records import PendingLinkRecord

PENDING = "pending"


def pending_record(row: PendingLink) -> PendingLinkRecord:
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


async def propose_link(
    session: AsyncSession,
    *,
    identity_id: str,
    target_customer_id: str,
    identifier_kind: str,
    identifier_value: str,
    claimed_level: str,
    reason: str,
) -> bool:
    """Propose linking the identity to the target customer via this identifier; False (and
    nothing written) when the same proposal is pending already."""
    already = await session.scalar(
        select(PendingLink.id).where(
            PendingLink.identity_id == identity_id,
            PendingLink.target_customer_id == target_customer_id,
            PendingLink.identifier_kind == identifier_kind,
            PendingLink.identifier_value == identifier_value,
            PendingLink.status == PENDING,
        )
    )
    if already is not None:
        return False
    session.add(
        PendingLink(
            identity_id=identity_id,
            target_customer_id=target_customer_id,
            identifier_kind=identifier_kind,
            identifier_value=identifier_value,
            claimed_level=claimed_level,
            reason=reason,
        )
    )
    await session.flush()
    return True


async def list_pending(
    session: AsyncSession, *, customer_id: str | None = None
) -> list[PendingLinkRecord]:
    """Pending proposals, oldest first; with `customer_id`, those toward that customer or
    from one of its identities."""
    query = select(PendingLink).where(PendingLink.status == PENDING)
    if customer_id is not None:
        identity_ids = select(ChannelIdentity.id).where(ChannelIdentity.customer_id == customer_id)
        query = query.where(
            (PendingLink.target_customer_id == customer_id)
            | PendingLink.identity_id.in_(identity_ids)
        )
    rows = await session.scalars(query.order_by(PendingLink.created_at, PendingLink.id))
    return [pending_record(row) for row in rows]


async def get_pending(session: AsyncSession, link_id: str) -> PendingLinkRecord:
    """A proposal still pending; raises `RecordNotFound` for one decided or unknown."""
    row = await session.get(PendingLink, link_id)
    if row is None or row.status != PENDING:
        raise RecordNotFound(f"pending link {link_id} not found")
    return pending_record(row)


async def decide(session: AsyncSession, link_id: str, *, status: str, actor: str) -> None:
    """Record the decision on a proposal (confirmed, rejected…), by whom and when."""
    result = await session.execute(
        update(PendingLink)
        .where(PendingLink.id == link_id)
        .values(status=status, decided_at=utcnow(), decided_by=actor)
    )
    if not cast(CursorResult[Any], result).rowcount:
        raise RecordNotFound(f"pending link {link_id} not found")


async def retarget_pending(session: AsyncSession, source: str, target: str) -> None:
    """After merging `source` into `target`: proposals toward the merged-away customer now
    concern the target; the ones the merge itself fulfilled (identity and candidate now the
    same customer) are closed as satisfied."""
    await session.execute(
        update(PendingLink)
        .where(PendingLink.target_customer_id == source, PendingLink.status == PENDING)
        .values(target_customer_id=target)
    )
    own = select(ChannelIdentity.id).where(ChannelIdentity.customer_id == target)
    await session.execute(
        update(PendingLink)
        .where(
            PendingLink.target_customer_id == target,
            PendingLink.status == PENDING,
            PendingLink.identity_id.in_(own),
        )
        .values(status="satisfied", decided_at=utcnow(), decided_by="merge")
    )
