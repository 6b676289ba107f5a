"""The storage the accept path uses: episode totals in one update, tenant settings cached."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import DuplicateMessage
from gateway.storage.models import Episode, TenantConfig
from gateway.storage.records import NewMessage
from gateway.storage.repositories import customers, episodes, messages, tenants, turns
from gateway.storage.updates import TurnOutcome


async def _episode_row(session: AsyncSession, episode_id: str) -> tuple[int, object]:
    row = (
        await session.execute(
            select(Episode.token_total, Episode.last_message_at).where(Episode.id == episode_id)
        )
    ).one()
    return int(row[0]), row[1]


async def test_record_message_adds_tokens_and_never_moves_time_back(
    session: AsyncSession,
) -> None:
    customer = await customers.create_customer(session)
    start = utcnow()
    episode = await episodes.open_episode(
        session, customer_id=customer.id, channel="whatsapp", started_at=start
    )
    later = start + timedelta(minutes=5)
    await episodes.record_message(session, episode.id, at=later, tokens=7)
    await episodes.record_message(session, episode.id, at=start + timedelta(minutes=1), tokens=3)
    total, last = await _episode_row(session, episode.id)
    assert total == 10
    assert last == later


async def test_a_duplicate_adds_nothing_and_a_turn_reads_back(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    new = NewMessage(
        customer_id=customer.id,
        episode_id=episode.id,
        channel="whatsapp",
        role="user",
        text="oi",
        token_count=5,
        provider_message_id="SM-hot-1",
    )
    stored = await messages.append_message(session, new)
    with pytest.raises(DuplicateMessage):
        await messages.append_message(session, new)
    total, _ = await _episode_row(session, episode.id)
    assert total == 5  # counted once, by the insert that stored a row
    turn = await turns.create_turn(
        session,
        inbound_message_id=stored.id,
        customer_id=customer.id,
        episode_id=episode.id,
        conversation_key=f"{customer.id}:whatsapp",
    )
    assert await turns.next_pending(session, turn.conversation_key) == turn
    finished = await turns.finish_turn(session, turn.id, TurnOutcome(status="done", model="m"))
    assert (finished.status, finished.model) == ("done", "m")
    assert await turns.next_pending(session, turn.conversation_key) is None


async def test_claim_fence_refuses_an_older_holder(session: AsyncSession) -> None:
    key = "c-fence:whatsapp"
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "conversation_fences" in statement:
            statements.append(statement)

    assert session.bind is not None
    engine = session.bind.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        assert await turns.claim_fence(session, key, 3)  # creates the row
        assert await turns.claim_fence(session, key, 3)  # the same holder writes again
        assert await turns.claim_fence(session, key, 5)
        assert not await turns.claim_fence(session, key, 4)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(statements) == 4  # one each, the first (no row yet) included
    assert await turns.current_fence(session, key) == 5


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_settings_cache_serves_within_its_ttl_and_sees_local_saves(
    session: AsyncSession,
) -> None:
    await tenants.save_tenant_settings(session, domain="default", settings={"window": 9000})
    clock = Clock()
    cache = tenants.SettingsCache(ttl_s=5.0, clock=clock)
    assert (await cache.get(session, channel="whatsapp")).window == 9000
    # Written behind the cache's back (as another process would): not seen until the TTL ends.
    await session.execute(
        update(TenantConfig)
        .where(TenantConfig.domain == "default")
        .values(settings={"window": 9100})
    )
    clock.now = 4.9
    assert (await cache.get(session, channel="whatsapp")).window == 9000
    clock.now = 5.1
    assert (await cache.get(session, channel="whatsapp")).window == 9100
    # A save through the repository in this process empties the cache at once.
    await tenants.save_tenant_settings(session, domain="default", settings={"window": 9200})
    assert (await cache.get(session, channel="whatsapp")).window == 9200
    # Keys are separate per host and channel.
    assert (await cache.get(session, host="shop.example", channel="phone")).window == 9200
