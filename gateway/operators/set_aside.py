"""An operator puts an inbox row that was set aside (it failed too often) back in line."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.operators.reasons import check_reason
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import AuditRecord
from gateway.storage.repositories import audit, inbox


async def retry_set_aside(
    session: AsyncSession, item_id: int, *, actor: str, reason: str
) -> AuditRecord:
    """Put a set-aside inbox row back in line and audit it, in the caller's transaction."""
    reason = check_reason(reason)
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
