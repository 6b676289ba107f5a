"""A customer seen on WhatsApp, web chat, a phone call and Telegram, compacted, exported and
erased through two gateway instances sharing one database and one Redis: afterwards no table,
no Redis key and no recall cache of either instance holds anything of them."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

import jwt
import pytest
from redis.asyncio import Redis
from sqlalchemy import select

from channels.telegram import SECRET_HEADER
from devtools.twilio_webhook import inbound_text
from gateway.keys import MEMORY, RECALL, SESSIONS
from gateway.memory.queue import CompactionJob
from gateway.storage.models import AuditEntry, Base, EpisodeSummary, Fact, Message
from tests.support.databases import REDIS_URL
from tests.support.signed_twilio import post_signed
from tests.support.stack import API_KEY, WEBCHAT_SECRET, Stack, database_url, running_stack
from tests.support.telegram_server import FakeBotApi
from tests.support.webchat import signed_visitor

pytestmark = pytest.mark.usefixtures("timedelta_periods")

AUTH = {"Authorization": f"Bearer {API_KEY}"}
TWILIO_TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"
TELEGRAM_TOKEN = "123456:TEST-token_abcdefghijklmnop"
TELEGRAM_SECRET = "webhook-secret_for-tests"
PHONE = "+5511987651234"
NAME = "Zuleica Pimentel-Arruda"
EMAIL = "zuleica.pimentel@exemplo-zpa.com.br"
CPF = "529.982.247-25"
ORDER = "7740091"
PIX = "7d9f0335-8dcc-4054-9bf9-0dbd61d36906"
# Every form a stored value might take (the CPF and the phone normalized to digits).
PERSONAL = (NAME, "Pimentel-Arruda", EMAIL, CPF, "52998224725", ORDER, PIX, PHONE, PHONE[1:])
# What the seeded conversations say in so many words.
SAID = (NAME, EMAIL, CPF, ORDER, PIX, PHONE)


def _settings(bot_base: str) -> dict[str, object]:
    return {
        "RELAYDESK_REDIS_URL": REDIS_URL,
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TELEGRAM_BOT_TOKEN": TELEGRAM_TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE": bot_base,
    }


async def _settle(*stacks: Stack) -> None:
    for stack in stacks:
        await stack.idle()


async def _whatsapp(stack: Stack, text: str) -> None:
    params = inbound_text(
        f"SM{uuid.uuid4().hex}",
        f"whatsapp:{PHONE}",
        text,
        account="AC" + "0" * 32,
        profile_name=NAME,
    )
    response = await post_signed(stack.client, params, token=TWILIO_TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200


async def _telegram(stack: Stack, user_id: int, update_id: int, **content: Any) -> None:
    body = {
        "update_id": update_id,
        "message": {
            "message_id": update_id % 100_000,
            "date": 1764400000,
            "from": {"id": user_id, "is_bot": False, "first_name": "Zuleica"},
            "chat": {"id": user_id, "type": "private", "first_name": "Zuleica"},
            **content,
        },
    }
    response = await stack.client.post(
        "/webhooks/telegram", json=body, headers={SECRET_HEADER: TELEGRAM_SECRET}
    )
    assert response.status == 200


def _token() -> str:
    claims = {
        "sub": "acct-zuleica",
        "exp": int(time.time()) + 600,
        "phone_number": PHONE,
        "phone_number_verified": True,
        "email": EMAIL,
        "email_verified": True,
    }
    return jwt.encode(claims, WEBCHAT_SECRET, algorithm="HS256")


async def _seed(one: Stack, two: Stack, telegram_user: int) -> str:
    """The customer on four channels; their id."""
    await _whatsapp(one, f"Oi, meu nome é {NAME} e meu e-mail é {EMAIL}")
    await _settle(one, two)
    async with one.app[SESSIONS]() as session:
        customer_id = await session.scalar(
            select(Message.customer_id).where(Message.channel == "whatsapp").limit(1)
        )
    assert customer_id is not None
    update = random.randrange(10**8, 10**9)
    await _telegram(
        one,
        telegram_user,
        update,
        contact={"phone_number": PHONE[1:], "first_name": "Zuleica", "user_id": telegram_user},
    )
    await _settle(one, two)
    await _telegram(two, telegram_user, update + 1, text=f"O pedido {ORDER} ainda não chegou")
    response = await two.client.post(
        "/webchat/messages",
        json={
            "visitor_id": await signed_visitor(two.client),
            "text": f"Meu CPF é {CPF}, sobre o pedido {ORDER}",
            "client_message_id": uuid.uuid4().hex,
        },
        headers={"Authorization": f"Bearer {_token()}"},
    )
    assert response.status == 202, await response.text()
    call = {
        "segments": [
            {
                "speaker": "agent",
                "text": "Central, bom dia",
                "start": 0.0,
                "end": 2.0,
                "confidence": 0.95,
                "words": None,
            },
            {
                "speaker": "customer",
                "text": f"minha chave pix é {PIX}",
                "start": 2.0,
                "end": 6.0,
                "confidence": 0.9,
                "words": None,
            },
        ]
    }
    posted = await one.client.post(
        "/v1/transcripts",
        json={
            "call_id": f"call-{uuid.uuid4().hex[:8]}",
            "caller": PHONE,
            "customer_id": customer_id,
            "started_at": "2026-11-02T14:00:00Z",
            "format": "native",
            "customer_speaker": None,
            "transcript": call,
        },
        headers={**AUTH, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert posted.status == 201, await posted.text()
    await _settle(one, two)
    async with one.app[SESSIONS]() as session:
        rows = (
            await session.execute(
                select(Message.channel, Message.episode_id).where(
                    Message.customer_id == customer_id
                )
            )
        ).all()
    assert {channel for channel, _ in rows} == {"whatsapp", "telegram", "webchat", "phone"}
    for episode_id in sorted({episode for _, episode in rows}):
        await one.app[MEMORY].handle(CompactionJob(customer_id, episode_id, "closed"))
    async with one.app[SESSIONS]() as session:
        summaries = await session.scalar(
            select(EpisodeSummary.id).where(EpisodeSummary.customer_id == customer_id).limit(1)
        )
        learned = set(
            await session.scalars(select(Fact.value).where(Fact.customer_id == customer_id))
        )
    assert summaries is not None
    assert EMAIL in learned
    return str(customer_id)


async def _database_text(stack: Stack) -> str:
    """Every column of every row of every table, as text."""
    parts: list[str] = []
    async with stack.app[SESSIONS]() as session:
        for table in Base.metadata.sorted_tables:
            for row in await session.execute(select(table)):
                parts.extend(str(value) for value in row)
    return "\n".join(parts)


async def _redis_text(redis: Redis) -> str:
    parts: list[str] = []
    async for key in redis.scan_iter(count=500):
        parts.append(key.decode())
        raw = await redis.type(key)
        kind = raw.decode() if isinstance(raw, bytes) else str(raw)
        if kind == "string":
            parts.append(str(await redis.get(key)))
        elif kind == "hash":
            parts.append(str(await redis.hgetall(key)))
        elif kind == "list":
            parts.append(str(await redis.lrange(key, 0, -1)))
        elif kind == "set":
            parts.append(str(await redis.smembers(key)))
        elif kind == "zset":
            parts.append(str(await redis.zrange(key, 0, -1)))
        elif kind == "stream":
            parts.append(str(await redis.xrange(key)))
    return "\n".join(parts)


def _found(text: str, values: tuple[str, ...] = PERSONAL) -> list[str]:
    return [value for value in values if value in text]


async def _window(stack: Stack, **body: object) -> str:
    response = await stack.client.post(
        "/v1/context", json={"message": "e o pedido?", **body}, headers=AUTH
    )
    assert response.status == 200, await response.text()
    text: str = await response.text()
    return text


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_an_erased_customer_leaves_nothing_in_storage_redis_or_any_recall_cache(
    backend: str, tmp_path: Path, bot_api: tuple[FakeBotApi, str], redis: Redis
) -> None:
    await redis.flushdb()
    settings = _settings(bot_api[1])
    telegram_user = random.randrange(10**8, 10**9)
    async with (
        database_url(backend, tmp_path) as url,
        running_stack(backend, tmp_path, database=url, **settings) as one,
        running_stack(backend, tmp_path, database=url, **settings) as two,
    ):
        customer_id = await _seed(one, two, telegram_user)
        # The other instance serves the customer: its recall cache keeps them.
        await _window(two, channel="whatsapp", external_id=PHONE)
        assert two.app[RECALL].holds(customer_id)
        assert _found(await _database_text(one), SAID) == list(SAID)

        exported = await one.client.get(
            f"/v1/operator/customers/{customer_id}/export", headers=AUTH
        )
        assert exported.status == 200
        document = await exported.json()
        assert _found(json.dumps(document), SAID) == list(SAID)
        assert {m["channel"] for m in document["messages"]} == {
            "whatsapp",
            "telegram",
            "webchat",
            "phone",
        }
        assert document["summaries"] and document["facts"] and document["compaction_traces"]

        erased = await one.client.delete(
            f"/v1/operator/customers/{customer_id}",
            json={"reason": "data subject request #41", "actor": "dpo"},
            headers=AUTH,
        )
        assert erased.status == 200, await erased.text()
        result = await erased.json()
        assert result["removed"]["messages"] >= 4
        assert result["redis_keys_deleted"] >= 1

        for _ in range(100):  # the announcement crosses Redis to the other instance
            if not two.app[RECALL].holds(customer_id):
                break
            await asyncio.sleep(0.05)
        assert not two.app[RECALL].holds(customer_id)
        assert not one.app[RECALL].holds(customer_id)

        assert _found(await _database_text(one)) == []
        keyspace = await _redis_text(redis)
        assert _found(keyspace) == []
        assert customer_id not in keyspace
        async with one.app[SESSIONS]() as session:
            tombstones = list(
                await session.scalars(
                    select(AuditEntry).where(AuditEntry.subject_id == customer_id)
                )
            )
        actions = {entry.action for entry in tombstones}
        assert "customer.erased" in actions
        tombstone = next(e for e in tombstones if e.action == "customer.erased")
        assert (tombstone.actor, tombstone.reason) == ("dpo", "data subject request #41")
        assert tombstone.details["removed"]["messages"] == result["removed"]["messages"]
        # Every other row about them kept its action and actor, lost its details.
        assert all(e.details == {"erased": True} for e in tombstones if e is not tombstone)

        gone = await one.client.get(f"/v1/operator/customers/{customer_id}", headers=AUTH)
        assert gone.status == 404
        # Writing again, they are somebody new that knows nothing of the old customer.
        for stack in (one, two):
            seen = [
                await _window(stack, channel="whatsapp", external_id=PHONE),
                await _window(stack, channel="telegram", external_id=str(telegram_user)),
                await _window(stack, channel="phone", external_id=PHONE),
                await _window(
                    stack,
                    channel="webchat",
                    external_id="v" + uuid.uuid4().hex,
                    identity_token=_token(),
                ),
            ]
            for text in seen:
                assert customer_id not in text
                assert [v for v in _found(text) if v not in (PHONE, PHONE[1:], EMAIL)] == []
