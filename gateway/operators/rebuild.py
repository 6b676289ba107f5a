"""An operator's memory rebuild: redo a customer's summaries and facts from the raw messages
(pinned facts kept), then audit it with what was redone."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.rebuild import rebuild_customer
from gateway.memory.worker import MemoryWorker
from gateway.operators.reasons import check_reason
from gateway.storage.repositories import audit, customers


async def rebuild_memory(
    sessions: async_sessionmaker[AsyncSession],
    worker: MemoryWorker,
    customer_id: str,
    *,
    actor: str,
    reason: str,
) -> dict[str, int]:
    """Rebuild in transactions of its own and return the counts the audit entry records.

    Raises `BadRequest` for a blank reason and `RecordNotFound` for an unknown customer, both
    before anything is changed."""
    why = check_reason(reason)
    async with sessions() as session:
        await customers.get_customer(session, customer_id)
    report = await rebuild_customer(sessions, worker, customer_id)
    result = {
        "episodes": report.episodes,
        "messages_compacted": report.messages_compacted,
        "facts_written": report.facts_written,
    }
    async with sessions.begin() as session:
        await audit.record_audit(
            session,
            actor=actor,
            action="rebuild_memory",
            reason=why,
            subject_type="customer",
            subject_id=customer_id,
            details=result,
        )
    return result
