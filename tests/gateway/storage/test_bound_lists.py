"""Lists bound in the statements the accept and answer paths run for every lot: the same rows
found whatever the list's length, and on PostgreSQL one statement for every length (a statement
per length is prepared on each pooled connection and kept: the background process grew)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from gateway.storage.records import ChannelIdentityRecord, NewMessage, NewTurn
from gateway.storage.repositories import conversations, customers, episodes, messages, turns
from gateway.storage.repositories.bound_lists import in_bounded_shapes
from gateway.storage.repositories.conversations import MessageSeen

LENGTHS = (1, 3, 7)


@contextmanager
def statements_on(session: AsyncSession, table: str) -> Iterator[set[str]]:
    """The texts of the statements sent naming `table` while the block runs."""
    bind = session.bind
    assert isinstance(bind, AsyncConnection)  # the fixture's session runs on one connection
    seen: set[str] = set()

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        if f" {table}" in statement:
            seen.add(statement)

    engine = bind.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _postgresql(session: AsyncSession) -> bool:
    return session.bind is not None and session.bind.dialect.name == "postgresql"


async def _each_length(
    session: AsyncSession, table: str, look_up: Callable[[int], Awaitable[None]]
) -> None:
    with statements_on(session, table) as sent:
        for length in LENGTHS:
            await look_up(length)
    if _postgresql(session):
        assert len(sent) == 1, sent
    else:
        assert len(sent) == len(LENGTHS)  # SQLite: an expanding IN, nothing prepared


async def _stored_messages(session: AsyncSession, count: int) -> tuple[str, list[int]]:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    ids = []
    for index in range(count):
        stored = await messages.append_message(
            session,
            NewMessage(
                customer_id=customer.id,
                episode_id=episode.id,
                channel="whatsapp",
                role="user",
                text=f"message {index}",
                token_count=2,
                provider_message_id=f"SM-bound-{customer.id}-{index}",
            ),
        )
        ids.append(stored.id)
    return customer.id, ids


async def _identity(
    session: AsyncSession, customer_id: str, channel: str, external_id: str
) -> ChannelIdentityRecord:
    return await customers.create_identity(
        session,
        customer_id=customer_id,
        channel=channel,
        external_id=external_id,
        link_level="asserted",
        evidence={},
    )


async def test_messages_by_provider_ids_and_by_ids(session: AsyncSession) -> None:
    customer_id, ids = await _stored_messages(session, max(LENGTHS))

    async def by_provider_ids(length: int) -> None:
        keys = [("whatsapp", f"SM-bound-{customer_id}-{index}") for index in range(length)]
        found = await messages.find_by_provider_ids(session, [*keys, ("whatsapp", "SM-none")])
        assert sorted(found) == sorted(keys)
        assert [found[key].id for key in keys] == ids[:length]

    async def existing(length: int) -> None:
        wanted = [*ids[:length], max(ids) + 1000]
        assert await messages.existing_ids(session, wanted) == set(ids[:length])

    await _each_length(session, "messages", by_provider_ids)
    await _each_length(session, "messages", existing)


async def test_identities_identifiers_and_customers(session: AsyncSession) -> None:
    made = [await customers.create_customer(session) for _ in range(max(LENGTHS))]
    for index, customer in enumerate(made):
        identity = await _identity(session, customer.id, "telegram", f"bound-{customer.id}")
        await customers.add_identifier(
            session,
            customer_id=customer.id,
            kind="email",
            value=f"bound{index}-{customer.id}@example.com",
            link_level="asserted",
            source_identity_id=identity.id,
        )

    async def identities(length: int) -> None:
        keys = [("telegram", f"bound-{customer.id}") for customer in made[:length]]
        found = await customers.find_identities(session, [*keys, ("telegram", "nobody")])
        assert {key: found[key].customer_id for key in keys} == {
            key: customer.id for key, customer in zip(keys, made, strict=False)
        }
        assert len(found) == length

    async def owners(length: int) -> None:
        wanted = [
            ("email", f"bound{index}-{customer.id}@example.com")
            for index, customer in enumerate(made[:length])
        ]
        found = await customers.owners_of_identifiers(session, [*wanted, ("email", "x@y.z")])
        assert [found[key][0].customer_id for key in wanted] == [c.id for c in made[:length]]
        assert len(found) == length

    async def counts(length: int) -> None:
        wanted = [customer.id for customer in made[:length]]
        found = await customers.identifier_counts(session, wanted, link_level="asserted")
        assert sorted(found) == sorted((customer, "email", 1) for customer in wanted)

    async def unmerged(length: int) -> None:
        wanted = [customer.id for customer in made[:length]]
        assert await customers.unmerged_customers(session, wanted) == set(wanted)

    await _each_length(session, "channel_identities", identities)
    await _each_length(session, "customer_identifiers", owners)
    await _each_length(session, "customer_identifiers", counts)
    await _each_length(session, "customers", unmerged)


async def test_open_episodes_of_many_keys(session: AsyncSession) -> None:
    made = []
    for _ in range(max(LENGTHS)):
        customer = await customers.create_customer(session)
        identity = await _identity(session, customer.id, "webchat", f"visitor-{customer.id}")
        episode = await episodes.open_episode(
            session, customer_id=customer.id, channel="webchat", identity_id=identity.id
        )
        made.append(((customer.id, "webchat", identity.id), episode.id))

    async def open_of_many(length: int) -> None:
        keys = [key for key, _ in made[:length]]
        found = await episodes.latest_open_episodes(session, [*keys, ("x", "webchat", "y")])
        assert {key: found[key].id for key in keys} == dict(made[:length])
        assert len(found) == length

    await _each_length(session, "episodes", open_of_many)


# Lots of 1 to 12 rows: chunks of 8, 4, 2 and 1 at most (one shape per number of rows before).
LOT_SIZES = range(1, 13)
SHAPES = 4


def test_a_lot_goes_in_chunks_of_powers_of_two_in_order() -> None:
    for size in range(0, 70):
        rows = list(range(size))
        chunks = [list(chunk) for chunk in in_bounded_shapes(rows)]
        assert [row for chunk in chunks for row in chunk] == rows
        assert all(len(chunk) & (len(chunk) - 1) == 0 for chunk in chunks)
        assert [len(c) for c in chunks] == sorted((len(c) for c in chunks), reverse=True)
        assert len(chunks) == bin(size).count("1")


def _inserts(sent: set[str], table: str) -> set[str]:
    return {statement for statement in sent if statement.startswith(f"INSERT INTO {table} ")}


async def test_messages_turns_and_conversations_of_any_lot_in_a_few_statements(
    session: AsyncSession,
) -> None:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    with (
        statements_on(session, "messages") as sent_messages,
        statements_on(session, "turns") as sent_turns,
        statements_on(session, "conversations") as sent_conversations,
    ):
        for size in LOT_SIZES:
            news = [
                NewMessage(
                    customer_id=customer.id,
                    episode_id=episode.id,
                    channel="whatsapp",
                    role="user",
                    text=f"lot {size} message {index}",
                    token_count=3,
                    provider_message_id=f"SM-lot-{customer.id}-{size}-{index}",
                )
                for index in range(size)
            ]
            stored = await messages.append_messages(session, news)
            assert [m.text for m in stored] == [new.text for new in news]
            assert [m.id for m in stored] == sorted(m.id for m in stored)
            found = await messages.find_by_provider_ids(
                session, [("whatsapp", new.provider_message_id or "") for new in news]
            )
            assert {key: m.id for key, m in found.items()} == {
                ("whatsapp", m.provider_message_id): m.id for m in stored
            }

            keys = [f"whatsapp:lot-{size}-{index}" for index in range(size)]
            made = await turns.create_turns(
                session,
                [
                    NewTurn(
                        inbound_message_id=m.id,
                        customer_id=customer.id,
                        episode_id=episode.id,
                        conversation_key=key,
                    )
                    for m, key in zip(stored, keys, strict=True)
                ],
            )
            assert [t.inbound_message_id for t in made] == [m.id for m in stored]
            assert [t.id for t in made] == sorted(t.id for t in made)

            noted = await conversations.note_messages(
                session,
                [
                    MessageSeen(
                        conversation_key=key,
                        customer_id=customer.id,
                        channel="whatsapp",
                        identity_id=None,
                        external_id=key,
                        at=at + timedelta(minutes=size),
                        inbound=True,
                    )
                    for key in keys
                ],
            )
            assert sorted(noted) == sorted(keys)
            assert {c.last_inbound_at for c in noted.values()} == {at + timedelta(minutes=size)}

    assert len(_inserts(sent_messages, "messages")) <= SHAPES, _inserts(sent_messages, "messages")
    assert len(_inserts(sent_turns, "turns")) <= SHAPES
    assert len(_inserts(sent_conversations, "conversations")) <= SHAPES
