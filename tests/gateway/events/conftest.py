"""Fixtures: the outbox and senders on each backend's database (the real receiver is
`tests.support.events`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.events.outbox import EventOutbox
from gateway.events.sender import EventSender
from gateway.storage.models import OutboundEvent
from gateway.storage.repositories import outbound_events
from gateway.storage.repositories.outbound_events import OutboundEventState
from tests.support.events import SECRET, EventReceiver, until

MakeSender = Callable[..., EventSender]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0)) as client:
        yield client


@pytest.fixture
async def clean_sessions(
    sessions: async_sessionmaker[AsyncSession],
) -> async_sessionmaker[AsyncSession]:
    """The backend's committing sessions, with no event left by an earlier test."""
    async with sessions.begin() as session:
        await session.execute(delete(OutboundEvent))
    return sessions


@pytest.fixture
async def make_sender(
    clean_sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    receiver: EventReceiver,
) -> AsyncIterator[MakeSender]:
    """Senders with short delays (quick tests), closed after the test."""
    made: list[EventSender] = []

    def make(**overrides: Any) -> EventSender:
        options: dict[str, Any] = {
            "url": receiver.url,
            "secret": SECRET,
            "poll_s": 0.05,
            "base_delay_s": 0.05,
            "max_delay_s": 0.4,
        }
        options.update(overrides)
        sessions = options.pop("sessions", clean_sessions)
        client = options.pop("http", http)
        sender = EventSender(sessions, client, **options)
        made.append(sender)
        return sender

    yield make
    for sender in made:
        await sender.close()


async def record(
    sessions: async_sessionmaker[AsyncSession],
    outbox: EventOutbox,
    kind: str,
    data: dict[str, Any],
) -> None:
    """Record one event in a transaction of its own that commits."""
    async with sessions() as session:
        async with session.begin():
            await outbox.record(session, kind, data)


async def states(sessions: async_sessionmaker[AsyncSession]) -> list[OutboundEventState]:
    async with sessions() as session:
        return await outbound_events.states(session)


async def settled(sessions: async_sessionmaker[AsyncSession], count: int) -> None:
    """Until `count` events are delivered or given up (the receiver answers before the sender
    records what it answered)."""

    async def check() -> bool:
        rows = await states(sessions)
        return sum(row.delivered_at is not None or row.given_up for row in rows) >= count

    await until(check)
