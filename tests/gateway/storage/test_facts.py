from __future__ import annotations

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import CustomerScopeRequired, InvalidFactSource
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import customers, episodes, facts, messages


async def _message(
    session: AsyncSession, text: str = "minha chave pix é a@b.com"
) -> tuple[str, int]:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    stored = await messages.append_message(
        session, NewMessage(customer.id, episode.id, "whatsapp", "user", text, token_count=8)
    )
    return customer.id, stored.id


async def test_a_fact_carries_its_source(session: AsyncSession) -> None:
    customer_id, message_id = await _message(session)
    fact = await facts.record_fact(
        session, customer_id, NewFact("pix_key", "a@b.com", "payment", message_id, tags=("pix",))
    )
    assert fact.source_message_id == message_id
    assert fact.source_channel == "whatsapp"
    assert fact.tags == ("pix",)
    assert fact.is_current


async def test_a_correction_supersedes_and_keeps_history(session: AsyncSession) -> None:
    customer_id, first_message = await _message(session)
    episode_id = (await messages.get_message(session, customer_id, first_message)).episode_id
    correction = await messages.append_message(
        session,
        NewMessage(customer_id, episode_id, "whatsapp", "user", "errei, é c@d.com", token_count=6),
    )
    old = await facts.record_fact(
        session, customer_id, NewFact("pix_key", "a@b.com", "payment", first_message)
    )
    new = await facts.record_fact(
        session, customer_id, NewFact("pix_key", "c@d.com", "payment", correction.id)
    )
    current = await facts.current_facts(session, customer_id)
    assert [(f.key, f.value) for f in current] == [("pix_key", "c@d.com")]
    history = await facts.fact_history(session, customer_id, "pix_key")
    assert [f.value for f in history] == ["a@b.com", "c@d.com"]
    assert history[0].superseded_by == new.id
    assert history[0].id == old.id
    assert history[1].source_message_id == correction.id


async def test_same_value_again_does_not_add_a_row(session: AsyncSession) -> None:
    customer_id, message_id = await _message(session)
    one = await facts.record_fact(
        session, customer_id, NewFact("email", "a@b.com", "profile", message_id)
    )
    two = await facts.record_fact(
        session, customer_id, NewFact("email", "a@b.com", "profile", message_id)
    )
    assert one.id == two.id
    assert len(await facts.fact_history(session, customer_id, "email")) == 1


async def test_a_fact_without_a_valid_source_is_refused(session: AsyncSession) -> None:
    customer_id, message_id = await _message(session)
    other_customer, other_message = await _message(session, "outro cliente")
    with pytest.raises(InvalidFactSource):
        await facts.record_fact(session, customer_id, NewFact("email", "x@y.z", "profile", 10**9))
    with pytest.raises(InvalidFactSource):
        await facts.record_fact(
            session, customer_id, NewFact("email", "x@y.z", "profile", other_message)
        )
    assert await facts.current_facts(session, customer_id) == []


async def test_scope_filter_confirm_pin_retract(session: AsyncSession) -> None:
    customer_id, message_id = await _message(session)
    email = await facts.record_fact(
        session, customer_id, NewFact("email", "a@b.com", "profile", message_id)
    )
    await facts.record_fact(
        session, customer_id, NewFact("pix_key", "a@b.com", "payment", message_id)
    )
    profile_only = await facts.current_facts(session, customer_id, scopes=["public", "profile"])
    assert [f.key for f in profile_only] == ["email"]
    confirmed = await facts.confirm_fact(session, customer_id, email.id, message_id)
    assert confirmed.confirmed and confirmed.confirmed_by_message_id == message_id
    assert (await facts.set_pinned(session, customer_id, email.id, True)).pinned
    await facts.retract_fact(session, customer_id, email.id)
    assert [f.key for f in await facts.current_facts(session, customer_id)] == ["pix_key"]
    with pytest.raises(CustomerScopeRequired):
        await facts.current_facts(session, "")


async def test_multi_valued_keys_gain_values_instead_of_superseding(
    session: AsyncSession,
) -> None:
    customer_id, message_id = await _message(session, "pedidos 4471 e 5520")
    for value in ("4471", "5520", "4471"):
        await facts.record_fact(
            session,
            customer_id,
            NewFact("order_id", value, "account", message_id),
            single_valued=False,
        )
    current = await facts.current_facts(session, customer_id)
    assert sorted(f.value for f in current) == ["4471", "5520"]


async def test_a_pinned_value_is_not_replaced_by_learned_ones(session: AsyncSession) -> None:
    customer_id, message_id = await _message(session, "meu e-mail é velho@example.org")
    pinned = await facts.record_fact(
        session,
        customer_id,
        NewFact("email", "novo@example.org", "profile", message_id, pinned=True),
    )
    kept = await facts.record_fact(
        session, customer_id, NewFact("email", "velho@example.org", "profile", message_id)
    )
    assert kept.id == pinned.id
    assert [f.value for f in await facts.current_facts(session, customer_id)] == [
        "novo@example.org"
    ]


async def test_a_held_source_message_is_not_read_again(session: AsyncSession) -> None:
    # The facts of a message being answered: the caller holds the message already.
    customer_id, message_id = await _message(session)
    held = await messages.get_message(session, customer_id, message_id)
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(" ".join(statement.split()))

    engine = (await session.connection()).sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        fact = await facts.record_fact(
            session, customer_id, NewFact("email", "a@b.com", "profile", message_id), source=held
        )
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert (fact.source_message_id, fact.source_episode_id) == (message_id, held.episode_id)
    assert not [s for s in statements if "FROM messages" in s]
    assert len([s for s in statements if s.startswith("INSERT INTO facts")]) == 1
    # Another customer's message is refused, held or not.
    other_customer, other_message = await _message(session, "outro cliente")
    other = await messages.get_message(session, other_customer, other_message)
    with pytest.raises(InvalidFactSource):
        await facts.record_fact(
            session, customer_id, NewFact("email", "x@y.z", "profile", other_message), source=other
        )
