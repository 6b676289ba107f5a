from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import Media
from gateway.runtime.clock import utcnow
from gateway.storage.errors import CustomerScopeRequired, DuplicateMessage, RecordNotFound
from gateway.storage.message_meta import MessageMeta
from gateway.storage.models import ImmutableRowError, Message
from gateway.storage.records import NewMessage, SenderSnapshot
from gateway.storage.repositories import customers, episodes, messages


async def _episode(session: AsyncSession) -> tuple[str, str]:
    customer = await customers.create_customer(session, display_name="Ana")
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="webchat")
    return customer.id, episode.id


def _oi(customer_id: str, episode_id: str, provider_message_id: str, **more: Any) -> NewMessage:
    """A customer's "oi" on WhatsApp, with the provider's id and any ``more`` fields."""
    return NewMessage(
        customer_id=customer_id,
        episode_id=episode_id,
        channel="whatsapp",
        role="user",
        text="oi",
        token_count=1,
        provider_message_id=provider_message_id,
        **more,
    )


async def test_append_and_read_back_keeps_every_field(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    stored = await messages.append_message(
        session,
        NewMessage(
            customer_id=customer_id,
            episode_id=episode_id,
            channel="webchat",
            role="user",
            text="Meu pedido 4471 não chegou",
            token_count=9,
            provider_message_id="m-1",
            media=(Media("https://example.org/a.jpg"),),
        ),
    )
    again = await messages.get_message(session, customer_id, stored.id)
    assert again == stored
    assert again.token_count == 9
    assert again.created_at.tzinfo is not None
    assert again.media == (Media("https://example.org/a.jpg"),)


async def test_same_provider_id_on_same_channel_is_a_duplicate(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    new = _oi(customer_id, episode_id, "SM123")
    await messages.append_message(session, new)
    with pytest.raises(DuplicateMessage):
        await messages.append_message(session, new)
    # The transaction stays usable and holds exactly one row.
    rows = await session.scalars(select(Message).where(Message.provider_message_id == "SM123"))
    assert len(list(rows)) == 1
    # Same provider id on another channel is a different message.
    other = NewMessage(**{**_fields(new), "channel": "telegram"})
    assert (await messages.append_message(session, other)).channel == "telegram"


def _fields(new: NewMessage) -> dict[str, object]:
    return {name: getattr(new, name) for name in new.__slots__}


async def test_raw_messages_are_never_updated_in_place(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    stored = await messages.append_message(
        session,
        NewMessage(customer_id, episode_id, "webchat", "user", "original", token_count=1),
    )
    row = await session.get(Message, stored.id)
    assert row is not None
    row.text = "edited"
    with pytest.raises(ImmutableRowError):
        await session.flush()
    await session.rollback()


async def test_an_edit_is_a_new_version_that_points_at_the_original(
    session: AsyncSession,
) -> None:
    customer_id, episode_id = await _episode(session)
    first = await messages.append_message(
        session, NewMessage(customer_id, episode_id, "telegram", "user", "v1", token_count=1)
    )
    await messages.append_message(
        session,
        NewMessage(
            customer_id, episode_id, "telegram", "user", "v2", token_count=1, supersedes_id=first.id
        ),
    )
    history = await messages.episode_messages(session, customer_id, episode_id)
    assert [m.text for m in history] == ["v1", "v2"]
    assert history[1].supersedes_id == first.id


async def test_recent_messages_returns_the_newest_in_order(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    start = utcnow()
    for index in range(20):
        await messages.append_message(
            session,
            NewMessage(
                customer_id,
                episode_id,
                "webchat",
                "user" if index % 2 == 0 else "assistant",
                f"turn {index}",
                token_count=index + 1,
                created_at=start + timedelta(seconds=index),
            ),
        )
    recent = await messages.recent_messages(session, customer_id, episode_id, limit=5)
    assert [m.text for m in recent] == [f"turn {i}" for i in range(15, 20)]
    assert await messages.history_token_total(session, customer_id) == sum(range(1, 21))
    after = recent[1].id
    assert await messages.unsummarized_tokens(session, customer_id, episode_id, after) == (
        18 + 19 + 20
    )


async def test_reads_require_a_customer_and_do_not_cross_customers(
    session: AsyncSession,
) -> None:
    customer_id, episode_id = await _episode(session)
    stored = await messages.append_message(
        session, NewMessage(customer_id, episode_id, "webchat", "user", "secret", token_count=1)
    )
    other = await customers.create_customer(session)
    with pytest.raises(CustomerScopeRequired):
        await messages.recent_messages(session, "", episode_id, limit=5)
    with pytest.raises(RecordNotFound):
        await messages.get_message(session, other.id, stored.id)
    assert await messages.recent_messages(session, other.id, episode_id, limit=5) == []


async def test_the_sender_snapshot_reads_back_typed(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    sender = SenderSnapshot(
        sender="+5511998765432",
        link_level="verified",
        allowed_scopes=("payment", "profile", "public"),
        own_facts_only=False,
    )
    stored = await messages.append_message(
        session,
        _oi(customer_id, episode_id, "m-sender", meta=MessageMeta(kind="text"), sender=sender),
    )
    again = await messages.get_message(session, customer_id, stored.id)
    assert again.sender == sender == stored.sender
    assert again.meta == MessageMeta(kind="text")
    reply = await messages.append_message(
        session,
        NewMessage(customer_id, episode_id, "whatsapp", "assistant", "olá", 1, None, "r-1"),
    )
    assert (await messages.get_message(session, customer_id, reply.id)).sender is None
