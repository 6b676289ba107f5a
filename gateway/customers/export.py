"""A customer's data export (LGPD art. 18 / GDPR art. 15): one JSON document with everything
held about them, audited as "customer.exported".

A merged customer: the export follows the merge. Asked for a merged-away id, it exports the
customer that id became (`customers.surviving_customer`); the survivor's export includes the
customers merged into it (their rows under `customers`), since a merge moved everything
they owned to the survivor. `requested_id` says which id was asked for.

Sections: `customers` (the profile first), `identities` (with their evidence), `identifiers`,
`pending_links`, `conversations`, `episodes`, `messages` (every version: edits and transcript
versions are rows of their own), `facts` (superseded and retracted ones too, each with its
source message), `summaries` (with their sentences), `compaction_traces`, `turns`,
`deliveries` (outbound messages), `waiting_inbox` (messages not stored yet) and
`operator_actions` (the audit rows about the customer and their conversations).
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.repositories import audit, customers, erasure, export

FORMAT: Final = "relaydesk.customer-export.v1"
EXPORTED: Final = "customer.exported"


async def export_customer(
    sessions: async_sessionmaker[AsyncSession], customer_id: str, *, actor: str, reason: str
) -> dict[str, Any]:
    """The export document of `customer_id` (followed through merges); raises
    `RecordNotFound` for an unknown customer."""
    async with sessions.begin() as session:
        return await _export(session, customer_id, actor=actor, reason=reason)


async def _export(
    session: AsyncSession, customer_id: str, *, actor: str, reason: str
) -> dict[str, Any]:
    survivor = await customers.surviving_customer(session, customer_id)
    if survivor is None:
        raise RecordNotFound(f"customer {customer_id} not found")
    group = await erasure.absorbed_customers(session, survivor)
    sections = await export.customer_rows(session, group)
    # The survivor's row first, then the customers merged into it.
    sections["customers"].sort(key=lambda row: row["id"] != survivor)
    entry = await audit.record_audit(
        session,
        actor=actor,
        action=EXPORTED,
        reason=reason,
        subject_type="customer",
        subject_id=survivor,
        details={
            "requested_id": customer_id,
            "customers": group,
            "rows": {name: len(rows) for name, rows in sections.items()},
        },
    )
    return {
        "format": FORMAT,
        "customer_id": survivor,
        "requested_id": customer_id,
        "exported_at": utcnow().isoformat(),
        "export_audit_id": entry.id,
        **sections,
    }
