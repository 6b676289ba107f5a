"""The audit log of operator and identity actions: who, when, why, what moved."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import AuditEntry
from gateway.storage.records import AuditRecord


def audit_record(row: AuditEntry) -> AuditRecord:
    return AuditRecord(
        id=row.id,
        actor=row.actor,
        action=row.action,
        reason=row.reason,
        subject_type=row.subject_type,
        subject_id=row.subject_id,
        details=dict(row.details or {}),
        created_at=row.created_at,
    )


async def record_audit(
    session: AsyncSession,
    *,
    actor: str,
    action: str,
    reason: str,
    subject_type: str,
    subject_id: str,
    details: dict[str, Any] | None = None,
) -> AuditRecord:
    if not reason.strip():
        raise ValueError("an audited action needs a reason")
    row = AuditEntry(
        actor=actor,
        action=action,
        reason=reason,
        subject_type=subject_type,
        subject_id=subject_id,
        details=details or {},
    )
    session.add(row)
    await session.flush()
    return audit_record(row)


async def list_audit(
    session: AsyncSession,
    *,
    subject_id: str | None = None,
    action: str | None = None,
    limit: int = 200,
) -> list[AuditRecord]:
    query = select(AuditEntry)
    if subject_id is not None:
        query = query.where(AuditEntry.subject_id == subject_id)
    if action is not None:
        query = query.where(AuditEntry.action == action)
    rows = await session.scalars(query.order_by(AuditEntry.id.desc()).limit(limit))
    return [audit_record(row) for row in rows]
