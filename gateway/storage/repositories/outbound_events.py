"""Outbound events: written in the transaction of the change they announce (so an event exists
exactly when its change was committed), then taken by the event sender."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundEvent


async def add_event(session: AsyncSession, kind: str, payload: dict[str, Any]) -> None:
    now = utcnow()
    await session.execute(
        insert(OutboundEvent).values(
            kind=kind, payload=payload, attempts=0, next_attempt_at=now, created_at=now
        )
    )
