"""Writes waiting for the customer's confirmation (`ActionConfirmation` rows), or for an
operator's approval (status `approval` → `approved` | `rejected` | `expired`).

A conversation has at most one waiting for the customer: asking again cancels the one before.
Deciding is one conditional update (the status it had, and for a send not expired), so a held
write is sent at most once however many replies, operators or processes race for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import ActionConfirmation, Conversation
from gateway.storage.repositories.scrub import rowcount
from gateway.tenant_ref import TenantRef

WAITING = "waiting"
# A write an operator approves in the console; the customer's "SIM" does not decide it.
APPROVAL = "approval"
APPROVED = "approved"
REJECTED = "rejected"
EXPIRED = "expired"
# The decisions that send the write: refused once it has expired.
_SENDING = frozenset({"sent", APPROVED})


@dataclass(frozen=True, slots=True)
class ConfirmationRecord:
    id: str
    conversation_key: str
    customer_id: str
    identity_id: str
    turn_id: int
    action: str
    arguments_json: str
    status: str
    expires_at: datetime
    tenant: TenantRef
    created_at: datetime
    decided_at: datetime | None


@dataclass(frozen=True, slots=True)
class ApprovalWaiting:
    """A write waiting for an operator, with the conversation the console opens it in."""

    record: ConfirmationRecord
    conversation_id: str | None  # None: the conversation is gone (erased)


def _record(row: ActionConfirmation) -> ConfirmationRecord:
    return ConfirmationRecord(
        id=row.id,
        conversation_key=row.conversation_key,
        customer_id=row.customer_id,
        identity_id=row.identity_id,
        turn_id=row.turn_id,
        action=row.action,
        arguments_json=row.arguments,
        status=row.status,
        expires_at=row.expires_at,
        tenant=TenantRef.decode(row.tenant),
        created_at=row.created_at,
        decided_at=row.decided_at,
    )


async def ask(
    session: AsyncSession,
    *,
    tenant: str,
    conversation_key: str,
    customer_id: str,
    identity_id: str,
    turn_id: int,
    action: str,
    arguments_json: str,
    now: datetime,
    lasts: timedelta,
    status: str = WAITING,
) -> ConfirmationRecord:
    """Record a write waiting for the customer (or, ``status`` `approval`, for an operator);
    the conversation's earlier one waiting for the customer is cancelled."""
    await session.execute(
        update(ActionConfirmation)
        .where(
            ActionConfirmation.conversation_key == conversation_key,
            ActionConfirmation.status == WAITING,
        )
        .values(status="cancelled", decided_at=now)
    )
    row = ActionConfirmation(
        tenant=tenant,
        conversation_key=conversation_key,
        customer_id=customer_id,
        identity_id=identity_id,
        turn_id=turn_id,
        action=action,
        arguments=arguments_json,
        status=status,
        created_at=now,
        expires_at=now + lasts,
    )
    session.add(row)
    await session.flush()
    return _record(row)


async def waiting(session: AsyncSession, conversation_key: str) -> ConfirmationRecord | None:
    """The conversation's write waiting for the customer (expired or not), if any."""
    row = await session.scalar(
        select(ActionConfirmation)
        .where(
            ActionConfirmation.conversation_key == conversation_key,
            ActionConfirmation.status == WAITING,
        )
        .order_by(ActionConfirmation.created_at.desc())
        .limit(1)
    )
    return _record(row) if row is not None else None


async def decide(
    session: AsyncSession,
    confirmation_id: str,
    status: str,
    now: datetime,
    *,
    current: str = WAITING,
) -> bool:
    """Move a held write from ``current`` (waiting for the customer, or `approval`) to
    ``status``; False when another decision came first (or, for ``sent`` and ``approved``,
    when it has expired)."""
    conditions = [ActionConfirmation.id == confirmation_id, ActionConfirmation.status == current]
    if status in _SENDING:
        conditions.append(ActionConfirmation.expires_at > now)
    result = await session.execute(
        update(ActionConfirmation).where(*conditions).values(status=status, decided_at=now)
    )
    return rowcount(result) == 1


async def get(session: AsyncSession, confirmation_id: str) -> ConfirmationRecord | None:
    row = await session.get(ActionConfirmation, confirmation_id)
    return _record(row) if row is not None else None


async def of_conversation(
    session: AsyncSession, conversation_key: str, *, limit: int = 20
) -> list[ConfirmationRecord]:
    """The conversation's latest held writes, whatever became of them, newest first."""
    rows = await session.scalars(
        select(ActionConfirmation)
        .where(ActionConfirmation.conversation_key == conversation_key)
        .order_by(ActionConfirmation.created_at.desc(), ActionConfirmation.id)
        .limit(limit)
    )
    return [_record(row) for row in rows]


async def awaiting_approval(
    session: AsyncSession, now: datetime, *, limit: int = 50
) -> list[ApprovalWaiting]:
    """The writes an operator may still approve (not expired), oldest first."""
    found = await session.execute(
        select(ActionConfirmation, Conversation.id)
        .outerjoin(
            Conversation, Conversation.conversation_key == ActionConfirmation.conversation_key
        )
        .where(ActionConfirmation.status == APPROVAL, ActionConfirmation.expires_at > now)
        .order_by(ActionConfirmation.created_at, ActionConfirmation.id)
        .limit(limit)
    )
    return [ApprovalWaiting(_record(row), conversation_id) for row, conversation_id in found]
