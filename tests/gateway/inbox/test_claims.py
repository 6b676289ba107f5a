"""Claims of inbox rows: oldest first, none of a sender another live claim holds, and a cheap
look first so that a process woken for rows another one took runs no claim."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage
from gateway.inbox.processor import InboxProcessor
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import inbox
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from gateway.turns.accept import Accepted
from tests.conftest import DatabaseUnderTest

LEASE = timedelta(seconds=30)


@pytest.fixture
async def sessions(database: DatabaseUnderTest) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = database.engine()
    made = async_sessionmaker(engine, expire_on_commit=False)
    async with made.begin() as session:  # the worker's schema is shared by its tests
        await session.execute(inbox.INBOX.delete())
    yield made
    async with made.begin() as session:
        await session.execute(inbox.INBOX.delete())
    await engine.dispose()


async def _add(sessions: async_sessionmaker[AsyncSession], *names: str) -> None:
    """One row per name `<sender>-<n>`, in order."""
    now = utcnow()
    async with sessions.begin() as session:
        await inbox.add(
            session,
            [
                inbox.inbox_row(
                    channel="whatsapp",
                    provider_message_id=f"SM-claims-{name}",
                    thread_key=f"whatsapp:{name.split('-')[0]}",
                    tenant=DEFAULT_TENANT,
                    payload={"name": name},
                    received_at=now,
                )
                for name in names
            ],
        )


async def _claim(
    sessions: async_sessionmaker[AsyncSession], limit: int, **later: float
) -> list[str]:
    now = utcnow() + timedelta(seconds=later.get("seconds", 0.0))
    async with sessions.begin() as session:
        items = await inbox.claim(session, now=now, lease=LEASE, limit=limit)
    return [f"{item.payload['name']}/{item.attempts}" for item in items]


async def _claimable(sessions: async_sessionmaker[AsyncSession], *, seconds: float = 0.0) -> bool:
    now = utcnow() + timedelta(seconds=seconds)
    async with sessions() as session:
        return await inbox.claimable(session, now=now)


async def test_a_claim_takes_the_oldest_rows_of_senders_no_claim_holds(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    assert not await _claimable(sessions)
    await _add(sessions, "ana-1", "bia-1", "ana-2", "caio-1", "bia-2")
    assert await _claimable(sessions)
    assert await _claim(sessions, 2) == ["ana-1/1", "bia-1/1"]
    # Ana's and Bia's later rows wait for their first claim to end: only Caio's is taken.
    assert await _claim(sessions, 64) == ["caio-1/1"]
    assert await _claimable(sessions)  # rows wait, though their senders are held
    assert await _claim(sessions, 64) == []
    # Past the lease (a process that died holding them), everything is claimed again, in order.
    later = LEASE.total_seconds() + 1
    assert await _claim(sessions, 64, seconds=later) == [
        "ana-1/2",
        "bia-1/2",
        "ana-2/1",
        "caio-1/2",
        "bia-2/1",
    ]
    assert not await _claimable(sessions, seconds=later)


async def test_a_process_woken_for_rows_another_took_runs_one_read(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _add(sessions, "ana-1")
    assert await _claim(sessions, 64) == ["ana-1/1"]  # another process has it
    statements: list[str] = []

    def executed(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", executed)
    accepted: list[str] = []

    async def accept(message: InboundMessage, tenant: TenantRef) -> Accepted:
        accepted.append(message.provider_message_id)
        return Accepted(1, "customer", False, "customer:whatsapp")

    processor = InboxProcessor(sessions, accept, stored=lambda key: None)
    try:
        assert await processor.process_claim() == 0
    finally:
        event.remove(engine, "before_cursor_execute", executed)
        await processor.close()
    assert accepted == []
    assert len(statements) == 1, statements
    assert "EXISTS" in statements[0]
