"""Erasure tombstones as stored, on SQLite and PostgreSQL: hashes in, live ones found, an
erasure of the same message again moves the expiry, expired ones ignored then purged."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, event, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import ErasureTombstone
from gateway.storage.repositories import erasure_tombstones

ERASED = ("whatsapp", "SM" + "1" * 32)
OTHER_CHANNEL = ("telegram", "SM" + "1" * 32)
NEVER_ERASED = ("whatsapp", "SM" + "2" * 32)


async def _none_kept(session: AsyncSession) -> None:
    # Erasures of other tests on this database keep tombstones too; this test's transaction
    # starts from none (and is rolled back after).
    await session.execute(delete(ErasureTombstone))


async def test_live_tombstones_are_found_by_channel_and_provider_id(
    session: AsyncSession,
) -> None:
    await _none_kept(session)
    now = utcnow()
    assert await erasure_tombstones.keep(session, [ERASED, ERASED], until=now + timedelta(days=7))
    found = await erasure_tombstones.erased_among(
        session, [ERASED, OTHER_CHANNEL, NEVER_ERASED], now=now
    )
    assert found == {ERASED}
    keys = list(await session.scalars(select(ErasureTombstone.key_sha256)))
    assert keys == [erasure_tombstones.tombstone_key(*ERASED)]
    assert ERASED[1] not in keys[0]


async def test_erased_again_the_newer_expiry_holds_and_expired_ones_are_ignored_then_purged(
    session: AsyncSession,
) -> None:
    await _none_kept(session)
    now = utcnow()
    await erasure_tombstones.keep(session, [ERASED], until=now + timedelta(hours=1))
    await erasure_tombstones.keep(session, [ERASED], until=now + timedelta(days=7))
    later = now + timedelta(days=1)
    assert await erasure_tombstones.erased_among(session, [ERASED], now=later) == {ERASED}
    assert await erasure_tombstones.purge_expired(session, now=later) == 0

    gone = now + timedelta(days=8)
    assert await erasure_tombstones.erased_among(session, [ERASED], now=gone) == set()
    assert await erasure_tombstones.purge_expired(session, now=gone) == 1
    assert list(await session.scalars(select(ErasureTombstone))) == []


async def test_a_lookup_is_one_statement_whatever_the_number_of_keys(
    session: AsyncSession,
) -> None:
    # Looked up for every lot: on PostgreSQL a statement per lot size would be prepared on
    # each connection and crowd the hot statements out of the prepared statement cache.
    bind = session.bind
    assert isinstance(bind, AsyncConnection)  # the fixture's session runs on one connection
    if bind.dialect.name != "postgresql":
        pytest.skip("SQLite keeps no prepared statements between executions")
    statements: set[str] = set()

    def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "erasure_tombstones" in statement:
            statements.add(statement)

    engine = bind.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        for count in (1, 3, 7):
            keys = [("whatsapp", f"SM{index:032d}") for index in range(count)]
            assert await erasure_tombstones.erased_among(session, keys, now=utcnow()) == set()
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert len(statements) == 1, statements
