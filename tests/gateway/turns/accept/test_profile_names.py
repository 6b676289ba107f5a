"""A process remembers the profile names it found stored, so an unchanged name costs no
statement after the first; a name it wrote is read again until a read finds it stored, so a
rolled-back write is written again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.storage.repositories import customers, identity_names
from gateway.turns.accept.profile_names import ProfileNames


@contextmanager
def statements(sessions: async_sessionmaker[AsyncSession]) -> Iterator[list[str]]:
    seen: list[str] = []
    engine = sessions.kw["bind"].sync_engine

    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


async def _identity(sessions: async_sessionmaker[AsyncSession]) -> str:
    async with sessions.begin() as session:
        customer = await customers.create_customer(session)
        identity = await customers.create_identity(
            session,
            customer_id=customer.id,
            channel="whatsapp",
            external_id=f"+55119{customer.id[:8]}",
            link_level="verified",
            evidence={},
        )
    return identity.id


async def _stored(sessions: async_sessionmaker[AsyncSession], identity_id: str) -> str | None:
    async with sessions() as session:
        return (await identity_names.profile_names(session, [identity_id])).get(identity_id)


async def test_an_unchanged_name_is_read_once_then_costs_nothing(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    identity_id = await _identity(sessions)
    names = ProfileNames()
    for _ in range(2):  # the write, then the read that finds it stored
        async with sessions.begin() as session:
            await names.note(session, {identity_id: "Ana Souza"})
    assert await _stored(sessions, identity_id) == "Ana Souza"

    with statements(sessions) as seen:
        async with sessions.begin() as session:
            await names.note(session, {identity_id: "Ana Souza"})
    assert [s for s in seen if "channel_identities" in s] == []

    with statements(sessions) as seen:
        async with sessions.begin() as session:
            await names.note(session, {identity_id: "Ana S."})  # a new name is written
    assert any("UPDATE channel_identities" in s for s in seen)
    assert await _stored(sessions, identity_id) == "Ana S."


async def test_a_name_whose_write_was_rolled_back_is_written_again(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    identity_id = await _identity(sessions)
    names = ProfileNames()
    async with sessions() as session:
        await names.note(session, {identity_id: "Carla"})
        await session.rollback()
    assert await _stored(sessions, identity_id) is None

    async with sessions.begin() as session:
        await names.note(session, {identity_id: "Carla"})
    assert await _stored(sessions, identity_id) == "Carla"


async def test_the_oldest_remembered_names_are_let_go(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    first, second = await _identity(sessions), await _identity(sessions)
    names = ProfileNames(max_remembered=1)
    for _ in range(2):
        async with sessions.begin() as session:
            await names.note(session, {first: "Ana", second: "Bia"})
    with statements(sessions) as seen:
        async with sessions.begin() as session:
            await names.note(session, {first: "Ana", second: "Bia"})
    # only one of the two is remembered: the other is read again
    assert len([s for s in seen if "FROM channel_identities" in s]) == 1
