"""Outbound message rows (delivery status) and Idempotency-Key rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import DuplicateKey
from gateway.storage.models import IdempotencyKey
from gateway.storage.records import NewMessage
from gateway.storage.repositories import (
    customers,
    episodes,
    idempotency,
    messages,
    outbound,
    turns,
)


async def test_an_outbound_row_is_added_once_then_found(session: AsyncSession) -> None:
    first, created = await outbound.find_or_add_outbound(session, "whatsapp", "SM-1")
    again, created_again = await outbound.find_or_add_outbound(
        session, "whatsapp", "SM-1", status="delivered"
    )
    assert (created, created_again) == (True, False)
    assert again == first and first.status == "queued" and first.part == 0


async def test_a_send_joins_rows_a_callback_added_first(session: AsyncSession) -> None:
    turn_id, reply_id = await _answered_turn(session)
    early, created = await outbound.find_or_add_outbound(
        session, "whatsapp", "SM-b", status="sent", error_code="63016"
    )
    assert created and (early.status, early.error_code, early.turn_id) == ("sent", "63016", None)
    for part, provider_id in enumerate(("SM-a", "SM-b")):
        await outbound.record_part(
            session, "whatsapp", provider_id, turn_id=turn_id, reply_message_id=reply_id, part=part
        )
    first, _ = await outbound.find_or_add_outbound(session, "whatsapp", "SM-a")
    await outbound.set_delivery_status(session, first.id, status="delivered")
    await outbound.set_delivery_status(session, early.id, status="failed", error_code="30008")
    parts = await outbound.sent_for_turn(session, turn_id)
    assert [(p.provider_message_id, p.part, p.status, p.error_code) for p in parts] == [
        ("SM-a", 0, "delivered", None),
        ("SM-b", 1, "failed", "30008"),
    ]
    assert {p.reply_message_id for p in parts} == {reply_id}


async def _answered_turn(session: AsyncSession) -> tuple[int, int]:
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    inbound = await messages.append_message(
        session, NewMessage(customer.id, episode.id, "whatsapp", "user", "oi", token_count=1)
    )
    reply = await messages.append_message(
        session, NewMessage(customer.id, episode.id, "whatsapp", "assistant", "olá", token_count=1)
    )
    turn = await turns.create_turn(
        session,
        inbound_message_id=inbound.id,
        customer_id=customer.id,
        episode_id=episode.id,
        conversation_key="whatsapp:+5511",
    )
    return turn.id, reply.id


async def test_a_key_is_claimed_once_per_route(session: AsyncSession) -> None:
    now = utcnow()
    fields = {
        "fingerprint": "f" * 64,
        "created_at": now,
        "locked_until": now + timedelta(minutes=5),
    }
    key_id = await idempotency.add_claim(session, key="k", method="POST", path="/v1/a", **fields)
    with pytest.raises(DuplicateKey):
        async with session.begin_nested():
            await idempotency.add_claim(session, key="k", method="POST", path="/v1/a", **fields)
    other = await idempotency.add_claim(session, key="k", method="POST", path="/v1/b", **fields)
    found = await idempotency.find_key(session, key="k", method="POST", path="/v1/a")
    assert found is not None and found.id == key_id != other
    assert found.status == idempotency.IN_PROGRESS
    assert await idempotency.find_key(session, key="k", method="POST", path="/v1/c") is None


async def test_only_the_holder_of_a_claim_stores_or_releases_it(session: AsyncSession) -> None:
    now = utcnow()
    held_until = now + timedelta(minutes=5)
    key_id = await idempotency.add_claim(
        session,
        key="k",
        method="POST",
        path="/v1/a",
        fingerprint="f" * 64,
        created_at=now,
        locked_until=held_until,
    )
    stale = held_until - timedelta(minutes=1)
    await idempotency.release_claim(session, key_id, stale)  # someone else's lock: nothing
    await idempotency.store_response(
        session, key_id, stale, status=201, body="{}", content_type=None
    )
    row = await session.get(IdempotencyKey, key_id, populate_existing=True)
    assert row is not None and row.status == idempotency.IN_PROGRESS
    await idempotency.store_response(
        session, key_id, held_until, status=201, body='{"id": 1}', content_type="application/json"
    )
    done = await idempotency.find_key(session, key="k", method="POST", path="/v1/a")
    assert done is not None and done.status == idempotency.DONE
    assert (done.response_status, done.response_body) == (201, '{"id": 1}')
    await idempotency.release_claim(session, key_id, held_until)  # done: no longer a claim
    assert await idempotency.find_key(session, key="k", method="POST", path="/v1/a") == done


async def test_only_a_stale_key_is_taken_over(session: AsyncSession) -> None:
    now = utcnow()
    key_id = await idempotency.add_claim(
        session,
        key="k",
        method="POST",
        path="/v1/a",
        fingerprint="a" * 64,
        created_at=now,
        locked_until=now + timedelta(minutes=5),
    )
    take = {"fingerprint": "b" * 64, "expired_at": now - timedelta(hours=24)}
    later = now + timedelta(minutes=1)
    fresh = await idempotency.take_over(
        session, key_id, now=later, locked_until=later + timedelta(minutes=5), **take
    )
    assert fresh is False  # its holder's lock still runs
    abandoned_at = now + timedelta(minutes=6)
    assert await idempotency.take_over(
        session, key_id, now=abandoned_at, locked_until=abandoned_at + timedelta(minutes=5), **take
    )
    row = await idempotency.find_key(session, key="k", method="POST", path="/v1/a")
    assert row is not None and row.fingerprint == "b" * 64 and row.created_at == abandoned_at
