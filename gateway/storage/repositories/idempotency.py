"""`Idempotency-Key` rows: claimed while a request runs, then the response it produced.

A claim is told apart from a later claim of the same row by its `locked_until`: storing or
releasing touches the row only while it is still in progress under that lock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, and_, delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import DuplicateKey
from gateway.storage.models import IdempotencyKey
from gateway.storage.records import IdempotencyRecord

IN_PROGRESS = "in_progress"
DONE = "done"


def idempotency_record(row: IdempotencyKey) -> IdempotencyRecord:
    return IdempotencyRecord(
        id=row.id,
        key=row.key,
        method=row.method,
        path=row.path,
        fingerprint=row.fingerprint,
        status=row.status,
        response_status=row.response_status,
        response_body=row.response_body,
        content_type=row.content_type,
        created_at=row.created_at,
        locked_until=row.locked_until,
    )


async def add_claim(
    session: AsyncSession,
    *,
    key: str,
    method: str,
    path: str,
    fingerprint: str,
    created_at: datetime,
    locked_until: datetime,
) -> int:
    """Insert the key in progress and return its row id; raises `DuplicateKey` when the key is
    stored for this route already (the caller's transaction must then be rolled back)."""
    row = IdempotencyKey(
        key=key,
        method=method,
        path=path,
        fingerprint=fingerprint,
        status=IN_PROGRESS,
        created_at=created_at,
        locked_until=locked_until,
    )
    session.add(row)
    try:
        await session.flush()
    except IntegrityError as exc:
        raise DuplicateKey(f"idempotency key {key!r} on {method} {path} is stored") from exc
    return row.id


async def find_key(
    session: AsyncSession, *, key: str, method: str, path: str
) -> IdempotencyRecord | None:
    row = await session.scalar(
        select(IdempotencyKey).where(
            IdempotencyKey.key == key,
            IdempotencyKey.method == method,
            IdempotencyKey.path == path,
        )
    )
    return idempotency_record(row) if row else None


async def take_over(
    session: AsyncSession,
    key_id: int,
    *,
    fingerprint: str,
    now: datetime,
    expired_at: datetime,
    locked_until: datetime,
) -> bool:
    """Claim a stale row afresh: created at or before `expired_at`, or in progress with its
    lock run out at `now`. The staleness test is made in the UPDATE, so of two requests racing
    for one stale row exactly one wins (the winner's update makes it fresh for the other)."""
    result = await session.execute(
        update(IdempotencyKey)
        .where(
            IdempotencyKey.id == key_id,
            or_(
                IdempotencyKey.created_at <= expired_at,
                and_(
                    IdempotencyKey.status == IN_PROGRESS,
                    IdempotencyKey.locked_until <= now,
                ),
            ),
        )
        .values(
            fingerprint=fingerprint,
            status=IN_PROGRESS,
            response_status=None,
            response_body=None,
            content_type=None,
            created_at=now,
            locked_until=locked_until,
        )
    )
    return bool(cast(CursorResult[Any], result).rowcount)


def _claimed(key_id: int, locked_until: datetime) -> Any:
    return and_(
        IdempotencyKey.id == key_id,
        IdempotencyKey.status == IN_PROGRESS,
        IdempotencyKey.locked_until == locked_until,
    )


async def store_response(
    session: AsyncSession,
    key_id: int,
    locked_until: datetime,
    *,
    status: int,
    body: str,
    content_type: str | None,
) -> None:
    """Mark the claim done with its response; nothing when the claim is no longer held."""
    await session.execute(
        update(IdempotencyKey)
        .where(_claimed(key_id, locked_until))
        .values(
            status=DONE,
            response_status=status,
            response_body=body,
            content_type=content_type,
        )
    )


async def release_claim(session: AsyncSession, key_id: int, locked_until: datetime) -> None:
    """Delete the claim's row, so a retry runs again; nothing when it is no longer held."""
    await session.execute(delete(IdempotencyKey).where(_claimed(key_id, locked_until)))
