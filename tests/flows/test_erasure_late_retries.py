"""A provider's late retry of an erased message, through a real gateway on both backends: the
signed webhook stored, the customer (or the one message) erased through the operator API, the
same webhook retried → 200 and nothing stored, no customer created; once the tombstone has
expired the retry is stored again, and the retention run deletes the expired tombstone."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from redis.asyncio import Redis
from sqlalchemy import func, select, update

from gateway.memory.retention import run_retention
from gateway.runtime.clock import utcnow
from gateway.storage.models import (
    ChannelIdentity,
    Customer,
    ErasureTombstone,
    InboxMessage,
    Message,
)
from gateway.storage.repositories.erasure_tombstones import tombstone_key
from tests.support.databases import REDIS_URL
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import API_KEY, Stack, running_stack
from tests.support.webchat import signed_visitor

AUTH = {"Authorization": f"Bearer {API_KEY}"}
TWILIO_TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"
ACCOUNT = "AC" + "0" * 32
SETTINGS = {"TWILIO_AUTH_TOKEN": TWILIO_TOKEN, "RELAYDESK_PUBLIC_URL": PUBLIC_URL}


async def _count(stack: Stack, model: type) -> int:  # type: ignore[type-arg]
    async with stack.sessions()() as session:
        return int(await session.scalar(select(func.count()).select_from(model)) or 0)


async def _stored(stack: Stack) -> dict[str, int]:
    """What the database holds of customers, after every acknowledged webhook was processed."""
    await stack.idle()
    return {
        "customers": await _count(stack, Customer),
        "identities": await _count(stack, ChannelIdentity),
        "user_messages": await _user_messages(stack),
        "inbox": await _count(stack, InboxMessage),
    }


async def _user_messages(stack: Stack) -> int:
    async with stack.sessions()() as session:
        query = select(func.count()).select_from(Message).where(Message.role == "user")
        return int(await session.scalar(query) or 0)


async def _webhook(stack: Stack, params: dict[str, str]) -> None:
    response = await post_signed(stack.client, params, token=TWILIO_TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200, await response.text()
    assert "<Response>" in await response.text()


async def _customer_of(stack: Stack, sid: str) -> str:
    async with stack.sessions()() as session:
        customer = await session.scalar(
            select(Message.customer_id).where(Message.provider_message_id == sid)
        )
    assert customer is not None, sid
    return customer


async def _erase(stack: Stack, path: str) -> None:
    response = await stack.client.delete(
        path, json={"reason": "data subject request", "actor": "dpo"}, headers=AUTH
    )
    assert response.status == 200, await response.text()


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_late_retry_of_an_erased_customers_message_is_acknowledged_and_dropped(
    backend: str, tmp_path: Path
) -> None:
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    sid = f"SM{uuid.uuid4().hex}"
    first = inbound_params(sid, sender, "Meu CPF é 529.982.247-25", account=ACCOUNT)
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        await _webhook(stack, first)
        assert await _stored(stack) == {
            "customers": 1,
            "identities": 1,
            "user_messages": 1,
            "inbox": 0,
        }
        await _erase(stack, f"/v1/operator/customers/{await _customer_of(stack, sid)}")
        nothing = {"customers": 0, "identities": 0, "user_messages": 0, "inbox": 0}
        assert await _stored(stack) == nothing

        # The provider retries the erased message (twice): acknowledged, nothing stored.
        for _ in range(2):
            await _webhook(stack, first)
            assert await _stored(stack) == nothing
        if backend == "production":  # its dedupe mark, set again by the retry, went again
            redis = Redis.from_url(REDIS_URL)
            try:
                assert await redis.exists(f"relaydesk:seen:whatsapp:{sid}") == 0
            finally:
                await redis.aclose()

        # The tombstones (the message's and its reply's) hold hashes, not the provider's id.
        async with stack.sessions()() as session:
            tombstones = list(await session.scalars(select(ErasureTombstone)))
        assert tombstone_key("whatsapp", sid) in {t.key_sha256 for t in tombstones}
        for tombstone in tombstones:
            assert sid not in tombstone.key_sha256 and len(tombstone.key_sha256) == 64
            assert tombstone.expires_at > utcnow() + timedelta(days=6)

        # A new message of the same sender is a new customer's, as after any erasure.
        later = f"SM{uuid.uuid4().hex}"
        await _webhook(stack, inbound_params(later, sender, "Oi de novo", account=ACCOUNT))
        assert (await _stored(stack))["user_messages"] == 1

        # Past its expiry (the stored expiry moved back) the retry is stored again.
        async with stack.sessions().begin() as session:
            await session.execute(
                update(ErasureTombstone).values(expires_at=utcnow() - timedelta(seconds=1))
            )
        await _webhook(stack, first)
        assert (await _stored(stack))["user_messages"] == 2
        await _customer_of(stack, sid)

        # The retention run deletes the expired tombstone.
        removed = await run_retention(stack.sessions())
        assert removed["erasure_tombstones"] == len(tombstones)
        assert await _count(stack, ErasureTombstone) == 0


async def test_a_late_retry_of_one_erased_message_is_dropped(tmp_path: Path) -> None:
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    kept, erased = f"SM{uuid.uuid4().hex}", f"SM{uuid.uuid4().hex}"
    async with running_stack("embedded", tmp_path, **SETTINGS) as stack:
        await _webhook(stack, inbound_params(kept, sender, "Oi", account=ACCOUNT))
        mistake = inbound_params(erased, sender, "Gravado sem consentimento", account=ACCOUNT)
        await _webhook(stack, mistake)
        assert (await _stored(stack))["user_messages"] == 2
        async with stack.sessions()() as session:
            message_id = await session.scalar(
                select(Message.id).where(Message.provider_message_id == erased)
            )
        await _erase(stack, f"/v1/operator/messages/{message_id}")
        assert (await _stored(stack))["user_messages"] == 1

        await _webhook(stack, mistake)
        assert await _stored(stack) == {
            "customers": 1,
            "identities": 1,
            "user_messages": 1,
            "inbox": 0,
        }


async def test_a_web_chat_message_resent_after_its_erasure_is_refused(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        body = {
            "visitor_id": await signed_visitor(stack.client),
            "text": "Meu pedido 4471",
            "client_message_id": uuid.uuid4().hex,
        }
        sent = await stack.client.post("/webchat/messages", json=body)
        assert sent.status == 202, await sent.text()
        await stack.idle()
        async with stack.sessions()() as session:
            customer = await session.scalar(select(Message.customer_id).limit(1))
        await _erase(stack, f"/v1/operator/customers/{customer}")

        again = await stack.client.post("/webchat/messages", json=body)
        assert again.status == 409
        assert (await again.json())["error"] == "message_erased"
        assert (await _stored(stack))["customers"] == 0
