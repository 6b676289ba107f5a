"""What a customer owns and moving it, pending links, and the graph reads identity linking
makes (merged customers, verified identifier counts)."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound
from gateway.storage.records import ChannelIdentityRecord, NewMessage
from gateway.storage.repositories import (
    customers,
    episodes,
    messages,
    ownership,
    pending_links,
    summaries,
)


async def _identity(session: AsyncSession, external_id: str) -> ChannelIdentityRecord:
    customer = await customers.create_customer(session)
    return await customers.create_identity(
        session,
        customer_id=customer.id,
        channel=external_id.split(":", 1)[0],
        external_id=external_id,
        link_level="verified",
        evidence={},
    )


async def test_records_are_named_by_their_source_and_move_with_their_episode(
    session: AsyncSession,
) -> None:
    identity = await _identity(session, "whatsapp:+5511998765432")
    owner = identity.customer_id
    episode = await episodes.open_episode(
        session, customer_id=owner, channel="whatsapp", identity_id=identity.id
    )
    sourced = await messages.append_message(
        session,
        NewMessage(owner, episode.id, "whatsapp", "user", "oi", 1, identity_id=identity.id),
    )
    await messages.append_message(  # no source identity: not movable by identity
        session, NewMessage(owner, episode.id, "whatsapp", "assistant", "olá", 1)
    )
    await summaries.save_summary(
        session,
        customer_id=owner,
        episode_id=episode.id,
        summary="greeting",
        last_message_id=sourced.id,
        origin_channel="whatsapp",
        token_count=1,
    )
    found = await ownership.sourced_records(session, owner)
    assert [(r.kind, r.record_id, r.source_identity_id) for r in found] == [
        ("identity", identity.id, identity.id),
        ("episode", episode.id, identity.id),
        ("message", str(sourced.id), identity.id),
    ]

    other = await customers.create_customer(session)
    await ownership.reassign(
        session, {"episode": [episode.id], "message": [str(sourced.id)]}, other.id
    )
    assert [r.kind for r in await ownership.sourced_records(session, other.id)] == [
        "episode",
        "message",
    ]
    assert await summaries.episode_summary(session, owner, episode.id) is None
    moved = await summaries.episode_summary(session, other.id, episode.id)
    assert moved is not None and moved.summary == "greeting"


async def test_a_proposal_is_made_once_and_decided_once(session: AsyncSession) -> None:
    identity = await _identity(session, "telegram:42")
    target = await customers.create_customer(session)
    proposal = {
        "identity_id": identity.id,
        "target_customer_id": target.id,
        "identifier_kind": "phone",
        "identifier_value": "+5511998765432",
        "claimed_level": "asserted",
        "reason": "same phone",
    }
    assert await pending_links.propose_link(session, **proposal) is True
    assert await pending_links.propose_link(session, **proposal) is False
    [link] = await pending_links.list_pending(session, customer_id=identity.customer_id)
    assert await pending_links.list_pending(session, customer_id=target.id) == [link]
    assert await pending_links.get_pending(session, link.id) == link

    await pending_links.decide(session, link.id, status="rejected", actor="ops@example.org")
    assert await pending_links.list_pending(session) == []
    with pytest.raises(RecordNotFound):
        await pending_links.get_pending(session, link.id)


async def test_merged_customers_are_left_out_and_verified_values_counted(
    session: AsyncSession,
) -> None:
    ana = await customers.create_customer(session)
    bob = await customers.create_customer(session)
    await customers.mark_merged(session, bob.id, ana.id)
    assert await customers.unmerged_customers(session, [ana.id, bob.id, "", "nobody"]) == {ana.id}
    assert await customers.unmerged_customers(session, []) == set()

    for value, level in (("+551", "verified"), ("+552", "verified"), ("+553", "asserted")):
        await customers.add_identifier(
            session,
            customer_id=ana.id,
            kind="phone",
            value=value,
            link_level=level,
            source_identity_id=None,
        )
    counts = await customers.identifier_counts(session, {ana.id, bob.id}, link_level="verified")
    assert counts == [(ana.id, "phone", 2)]

    await customers.set_identifier_level(
        session, customer_id=ana.id, kind="phone", value="+553", link_level="verified"
    )
    counts = await customers.identifier_counts(session, [ana.id], link_level="verified")
    assert counts == [(ana.id, "phone", 3)]
    assert await customers.identifier_counts(session, [], link_level="verified") == []


async def test_an_identity_by_id_or_none(session: AsyncSession) -> None:
    identity = await _identity(session, "webchat:anon:abc")
    assert await customers.find_identity_by_id(session, identity.id) == identity
    assert await customers.find_identity_by_id(session, "missing") is None
    with pytest.raises(RecordNotFound):
        await customers.mark_merged(session, "missing", identity.customer_id)
