"""The audit rows of a customer's action calls and of the decisions on them (`action.*`),
and of the step-up codes sent and typed for them (`verification.*`, `identity.verified`)."""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import AuditEntry
from gateway.storage.records import AuditRecord
from gateway.storage.repositories.audit import audit_record

ACTION_PREFIX = "action."
VERIFICATION_PREFIX = "verification."
IDENTITY_VERIFIED = "identity.verified"


async def recent_action_rows(
    session: AsyncSession, customer_id: str, *, limit: int
) -> list[AuditRecord]:
    """The customer's latest ``limit`` action and verification rows, newest first."""
    rows = await session.scalars(
        select(AuditEntry)
        .where(
            AuditEntry.subject_type == "customer",
            AuditEntry.subject_id == customer_id,
            or_(
                AuditEntry.action.startswith(ACTION_PREFIX, autoescape=True),
                AuditEntry.action.startswith(VERIFICATION_PREFIX, autoescape=True),
                AuditEntry.action == IDENTITY_VERIFIED,
            ),
        )
        .order_by(AuditEntry.id.desc())
        .limit(limit)
    )
    return [audit_record(row) for row in rows]
