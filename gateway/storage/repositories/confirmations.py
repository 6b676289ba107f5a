"""Writes waiting for the customer's confirmation (`ActionConfirmation` rows).

A conversation has at most one waiting: asking again cancels the one before. Deciding is one
conditional update (`status = 'waiting'` and not expired), so a confirmation is sent at most
once however many replies or processes race for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import ActionConfirmation
from gateway.storage.repositories.scrub import rowcount

WAITING = "waiting"


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
) -> ConfirmationRecord:
    """Record a write waiting for the customer; the conversation's earlier one is cancelled."""
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
        status=WAITING,
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


async def decide(session: AsyncSession, confirmation_id: str, status: str, now: datetime) -> bool:
    """Move a waiting confirmation to ``status``; False when another decision came first (or,
    for ``sent``, when it has expired)."""
    conditions = [ActionConfirmation.id == confirmation_id, ActionConfirmation.status == WAITING]
    if status == "sent":
        conditions.append(ActionConfirmation.expires_at > now)
    result = await session.execute(
        update(ActionConfirmation).where(*conditions).values(status=status, decided_at=now)
    )
    return rowcount(result) == 1
