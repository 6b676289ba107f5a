"""The operator's reads across profiles: customer search, whole fact history, one fact, the
episode on a channel, and superseding a corrected fact."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.models import Customer
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import customers, episodes, facts, messages, profiles


async def _customer_with_message(
    session: AsyncSession, display_name: str | None = None
) -> tuple[str, int]:
    customer = await customers.create_customer(session, display_name=display_name)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    stored = await messages.append_message(
        session, NewMessage(customer.id, episode.id, "whatsapp", "user", "oi", token_count=1)
    )
    return customer.id, stored.id


async def _search(session: AsyncSession, query: str, limit: int = 50) -> set[str]:
    return {c.id for c in await profiles.search_customers(session, query, limit=limit)}


async def test_search_matches_name_identity_digits_identifier_and_name_facts(
    session: AsyncSession,
) -> None:
    ana, _ = await _customer_with_message(session, "Ana Souza")
    await customers.create_identity(
        session,
        customer_id=ana,
        channel="whatsapp",
        external_id="whatsapp:+5511998765432",
        link_level="verified",
        evidence={},
    )
    bia, source = await _customer_with_message(session)
    await customers.add_identifier(
        session,
        customer_id=bia,
        kind="email",
        value="bia@example.com",
        link_level="claimed",
        source_identity_id=None,
    )
    await facts.record_fact(session, bia, NewFact("full_name", "Beatriz Lima", "profile", source))
    assert await _search(session, "ana souza") == {ana}
    assert await _search(session, "+55 11 99876-5432") == {ana}
    assert await _search(session, "BIA@EXAMPLE") == {bia}
    assert await _search(session, "beatriz") == {bia}
    assert await _search(session, bia) == {bia}
    assert await _search(session, "   ") == set()
    assert await _search(session, "nobody-by-this-name") == set()


async def test_search_finds_a_customer_by_the_profile_name_the_channel_gave(
    session: AsyncSession,
) -> None:
    joao, _ = await _customer_with_message(session)
    await customers.create_identity(
        session,
        customer_id=joao,
        channel="telegram",
        external_id="telegram:555001",
        link_level="verified",
        evidence={"profile_name": "João Pereira"},
    )
    other, _ = await _customer_with_message(session)
    await customers.create_identity(
        session,
        customer_id=other,
        channel="telegram",
        external_id="telegram:555002",
        link_level="verified",
        evidence={"source": "webhook"},
    )
    assert await _search(session, "joão pereira") == {joao}
    assert await _search(session, "Pereira") == {joao}
    assert await _search(session, "webhook") == set()  # other evidence is not a name


async def test_search_skips_merged_customers_and_superseded_names_and_honours_the_limit(
    session: AsyncSession,
) -> None:
    kept, source = await _customer_with_message(session, "Carla Kept")
    gone, _ = await _customer_with_message(session, "Carla Gone")
    await session.execute(update(Customer).where(Customer.id == gone).values(merged_into=kept))
    assert await _search(session, "carla") == {kept}
    await facts.record_fact(session, kept, NewFact("name", "Dora", "profile", source))
    await facts.record_fact(session, kept, NewFact("name", "Eva", "profile", source))
    assert await _search(session, "dora") == set()  # superseded by Eva
    assert await _search(session, "eva") == {kept}
    for _ in range(3):
        await customers.create_customer(session, display_name="Many Fernandes")
    assert len(await _search(session, "fernandes", limit=2)) == 2


async def test_search_text_is_literal_on_every_backend(session: AsyncSession) -> None:
    """LIKE's wildcards and escape characters typed in a query match only themselves, in
    names, identities, identifiers and name facts alike."""
    underscore, _ = await _customer_with_message(session, "Ana_Souza")
    lookalike, source = await _customer_with_message(session, "AnaxSouza")
    percent, _ = await _customer_with_message(session)
    await customers.create_identity(
        session,
        customer_id=percent,
        channel="webchat",
        external_id="web:anon:desconto-50%-bia",
        link_level="anonymous",
        evidence={},
    )
    slashes, _ = await _customer_with_message(session)
    await customers.add_identifier(
        session,
        customer_id=slashes,
        kind="email",
        value="carla/\\dias@example.com",
        link_level="claimed",
        source_identity_id=None,
    )
    await facts.record_fact(
        session, lookalike, NewFact("full_name", "Dora 100%", "profile", source)
    )
    assert await _search(session, "ana_souza") == {underscore}
    assert await _search(session, "_") == {underscore}
    assert await _search(session, "%") == {percent, lookalike}
    assert await _search(session, "0%-") == {percent}
    assert await _search(session, "/\\") == {slashes}
    assert await _search(session, "\\d") == {slashes}
    assert await _search(session, "%_%") == set()
    assert await _search(session, "anaxsouza") == {lookalike}


async def test_all_facts_keeps_superseded_and_retracted_rows_by_key(
    session: AsyncSession,
) -> None:
    customer_id, source = await _customer_with_message(session)
    old = await facts.record_fact(session, customer_id, NewFact("email", "a@x", "profile", source))
    new = await facts.record_fact(session, customer_id, NewFact("email", "b@x", "profile", source))
    city = await facts.record_fact(session, customer_id, NewFact("city", "Rio", "profile", source))
    await facts.retract_fact(session, customer_id, city.id)
    other, other_source = await _customer_with_message(session)
    await facts.record_fact(session, other, NewFact("email", "o@x", "profile", other_source))
    rows = await profiles.all_facts(session, customer_id)
    assert [(f.id, f.is_current) for f in rows] == [
        (city.id, False),
        (old.id, False),
        (new.id, True),
    ]
    assert rows[1].superseded_by == new.id


async def test_a_fact_by_id_is_only_the_customers_own(session: AsyncSession) -> None:
    customer_id, source = await _customer_with_message(session)
    fact = await facts.record_fact(session, customer_id, NewFact("email", "a@x", "profile", source))
    assert await profiles.fact_by_id(session, customer_id, fact.id) == fact
    other, _ = await _customer_with_message(session)
    with pytest.raises(RecordNotFound):
        await profiles.fact_by_id(session, other, fact.id)


async def test_supersede_links_the_old_fact_to_its_replacement(session: AsyncSession) -> None:
    customer_id, source = await _customer_with_message(session)
    old = await facts.record_fact(session, customer_id, NewFact("order", "1", "account", source))
    new = await facts.record_fact(
        session, customer_id, NewFact("order", "2", "account", source), single_valued=False
    )
    await profiles.supersede_fact(session, old.id, new.id)
    reread = await profiles.fact_by_id(session, customer_id, old.id)
    assert reread.superseded_by == new.id and not reread.is_current
    assert [f.id for f in await facts.current_facts(session, customer_id)] == [new.id]


async def test_the_first_episode_on_a_channel(session: AsyncSession) -> None:
    customer_id, _ = await _customer_with_message(session)
    assert await profiles.first_episode_id(session, customer_id, "console") is None
    now = utcnow()
    later = await episodes.open_episode(
        session, customer_id=customer_id, channel="console", started_at=now
    )
    earlier = await episodes.open_episode(
        session, customer_id=customer_id, channel="console", started_at=now - timedelta(days=1)
    )
    assert await profiles.first_episode_id(session, customer_id, "console") == earlier.id
    assert later.id != earlier.id
