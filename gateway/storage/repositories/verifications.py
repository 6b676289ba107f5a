"""One-time codes of step-up verification (`IdentityVerification` rows).

An identity has at most one code waiting: sending another replaces it. An attempt is one
conditional update on the attempts counted so far, so concurrent attempts (a customer typing
fast, two processes) each count once and only one can verify.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import IdentityVerification
from gateway.storage.repositories.scrub import rowcount

SENT = "sent"
LOCKED = "locked"
REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class VerificationRecord:
    id: str
    identity_id: str
    customer_id: str
    target_customer_id: str
    identifier_kind: str
    identifier_value: str
    sent_through: str
    code_digest: str
    salt: str
    attempts: int
    status: str
    expires_at: datetime


def _record(row: IdentityVerification) -> VerificationRecord:
    return VerificationRecord(
        id=row.id,
        identity_id=row.identity_id,
        customer_id=row.customer_id,
        target_customer_id=row.target_customer_id,
        identifier_kind=row.identifier_kind,
        identifier_value=row.identifier_value,
        sent_through=row.sent_through,
        code_digest=row.code_digest,
        salt=row.salt,
        attempts=row.attempts,
        status=row.status,
        expires_at=row.expires_at,
    )


@dataclass(frozen=True, slots=True)
class NewVerification:
    tenant: str
    identity_id: str
    customer_id: str
    target_customer_id: str
    identifier_kind: str
    identifier_value: str
    sent_through: str
    code_digest: str
    salt: str


async def start(
    session: AsyncSession, new: NewVerification, *, now: datetime, lasts: timedelta
) -> VerificationRecord:
    """Store a sent code for the identity, replacing the one waiting before."""
    await session.execute(
        update(IdentityVerification)
        .where(
            IdentityVerification.identity_id == new.identity_id,
            IdentityVerification.status == SENT,
        )
        .values(status=REPLACED, decided_at=now)
    )
    row = IdentityVerification(
        tenant=new.tenant,
        identity_id=new.identity_id,
        customer_id=new.customer_id,
        target_customer_id=new.target_customer_id,
        identifier_kind=new.identifier_kind,
        identifier_value=new.identifier_value,
        sent_through=new.sent_through,
        code_digest=new.code_digest,
        salt=new.salt,
        attempts=0,
        status=SENT,
        created_at=now,
        expires_at=now + lasts,
    )
    session.add(row)
    await session.flush()
    return _record(row)


async def waiting(
    session: AsyncSession, identity_id: str, now: datetime
) -> VerificationRecord | None:
    """The code the identity may be typing: one sent (expired or not: an attempt says so),
    or one locked by wrong attempts until it would have expired (its digits are still kept out
    of storage)."""
    row = (
        await session.execute(
            select(IdentityVerification)
            .where(
                IdentityVerification.identity_id == identity_id,
                or_(
                    IdentityVerification.status == SENT,
                    and_(
                        IdentityVerification.status == LOCKED,
                        IdentityVerification.expires_at > now,
                    ),
                ),
            )
            .order_by(IdentityVerification.created_at.desc())
            .limit(1)
        )
    ).scalar_one_or_none()
    return _record(row) if row is not None else None


async def attempt(
    session: AsyncSession, record: VerificationRecord, status: str, now: datetime
) -> bool:
    """Count one attempt on ``record`` as read, leaving it ``status`` (``sent`` while
    attempts remain); False when another attempt counted first."""
    return (
        rowcount(
            await session.execute(
                update(IdentityVerification)
                .where(
                    IdentityVerification.id == record.id,
                    IdentityVerification.status == SENT,
                    IdentityVerification.attempts == record.attempts,
                )
                .values(
                    attempts=record.attempts + 1,
                    status=status,
                    decided_at=None if status == SENT else now,
                )
            )
        )
        == 1
    )


async def statuses_for(session: AsyncSession, identity_id: str) -> list[tuple[str, int]]:
    """Every code of the identity as (status, attempts), oldest first (for audits and tests)."""
    rows = await session.execute(
        select(IdentityVerification.status, IdentityVerification.attempts)
        .where(IdentityVerification.identity_id == identity_id)
        .order_by(IdentityVerification.created_at)
    )
    return [(status, attempts) for status, attempts in rows.all()]
