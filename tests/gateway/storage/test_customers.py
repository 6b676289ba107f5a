from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import RecordNotFound
from gateway.storage.repositories import customers, episodes


async def test_identity_belongs_to_one_customer_per_channel_and_external_id(
    session: AsyncSession,
) -> None:
    ana = await customers.create_customer(session, display_name="Ana")
    identity = await customers.create_identity(
        session,
        customer_id=ana.id,
        channel="whatsapp",
        external_id="whatsapp:+5511998765432",
        link_level="verified",
        evidence={"kind": "whatsapp_sender"},
    )
    found = await customers.find_identity(session, "whatsapp", "whatsapp:+5511998765432")
    assert found == identity
    assert found.evidence == {"kind": "whatsapp_sender"}
    bob = await customers.create_customer(session)
    with pytest.raises(IntegrityError):
        async with session.begin_nested():
            await customers.create_identity(
                session,
                customer_id=bob.id,
                channel="whatsapp",
                external_id="whatsapp:+5511998765432",
                link_level="verified",
                evidence={},
            )


async def test_update_identity_level_and_owner(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    bob = await customers.create_customer(session)
    identity = await customers.create_identity(
        session,
        customer_id=ana.id,
        channel="webchat",
        external_id="web:anon:abc",
        link_level="anonymous",
        evidence={},
    )
    moved = await customers.update_identity(
        session, identity.id, link_level="verified", customer_id=bob.id
    )
    assert (moved.link_level, moved.customer_id) == ("verified", bob.id)
    assert [i.id for i in await customers.list_identities(session, bob.id)] == [identity.id]
    assert await customers.list_identities(session, ana.id) == []


async def test_identifiers_owned_across_customers(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    bob = await customers.create_customer(session)
    await customers.add_identifier(
        session,
        customer_id=ana.id,
        kind="phone",
        value="+5511998765432",
        link_level="verified",
        source_identity_id=None,
    )
    await customers.add_identifier(
        session,
        customer_id=bob.id,
        kind="phone",
        value="+5511998765432",
        link_level="asserted",
        source_identity_id=None,
    )
    raised = await customers.add_identifier(
        session,
        customer_id=bob.id,
        kind="phone",
        value="+5511998765432",
        link_level="verified",
        source_identity_id=None,
    )
    owners = await customers.owners_of_identifier(session, "phone", "+5511998765432")
    assert {(o.customer_id, o.link_level) for o in owners} == {
        (ana.id, "verified"),
        (bob.id, "verified"),
    }
    assert len(await customers.identifiers_of(session, bob.id)) == 1
    assert raised.link_level == "verified"


async def test_episodes_open_close_and_latest(session: AsyncSession) -> None:
    ana = await customers.create_customer(session)
    first = await episodes.open_episode(session, customer_id=ana.id, channel="webchat")
    latest = await episodes.latest_open_episode(session, ana.id, "webchat")
    assert latest is not None and latest.id == first.id
    await episodes.close_episode(session, first.id)
    assert await episodes.latest_open_episode(session, ana.id, "webchat") is None
    closed = await episodes.get_episode(session, ana.id, first.id)
    assert closed.status == "closed" and closed.ended_at is not None
    other = await customers.create_customer(session)
    with pytest.raises(RecordNotFound):
        await episodes.get_episode(session, other.id, first.id)
