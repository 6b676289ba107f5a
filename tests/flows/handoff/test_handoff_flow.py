"""Human handoff through a real gateway on both backends: signed WhatsApp webhooks in, the
real twilio client out to a local Twilio, the model a local OpenAI-compatible server.

While an operator holds a conversation the bot calls no model and sends nothing (the turn is
"human"); the operator's message reaches the customer; after the hand-back the bot's next
window carries the operator's message tagged as a person's."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from gateway.storage.models import AuditEntry, Message, TurnRow
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.whatsapp_stack import WhatsAppStack, until, whatsapp_stack

NUMBER = "+5511998765432"
BASE = "/v1/operator/conversations"

pytestmark = pytest.mark.parametrize("backend", ["embedded", "production"])


@asynccontextmanager
async def _gateway(
    tmp_path: Path, backend: str, model: FakeOpenAI, **settings: object
) -> AsyncIterator[WhatsAppStack]:
    async with model.serving() as base_url:
        async with whatsapp_stack(
            tmp_path, backend, **model_settings(base_url), **settings
        ) as gateway:
            yield gateway


async def _json(gateway: WhatsAppStack, method: str, path: str, **body: Any) -> tuple[int, Any]:
    client = gateway.stack.client
    if method == "GET":
        response = await client.get(path, headers=AUTH)
    else:
        response = await client.post(path, json=body, headers=AUTH)
    return response.status, await response.json()


async def _handoffs(gateway: WhatsAppStack, reason: str) -> float:
    """`relaydesk_handoffs_total` for the reason (0 before any)."""
    text = await (await gateway.stack.client.get("/metrics")).text()
    found = re.search(rf'^relaydesk_handoffs_total{{reason="{reason}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


async def _turn_of(gateway: WhatsAppStack, text: str) -> TurnRow:
    message_id = await gateway.message_id(text)
    async with gateway.stack.sessions()() as session:
        turn = await session.scalar(select(TurnRow).where(TurnRow.inbound_message_id == message_id))
    assert turn is not None
    return turn


async def test_an_operator_holds_writes_and_hands_back(tmp_path: Path, backend: str) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Olá, meu pedido atrasou")
        status, listed = await _json(gateway, "GET", BASE)
        assert status == 200
        [conversation] = listed["conversations"]
        assert conversation["owner"] == "bot" and conversation["held_by"] is None
        assert conversation["channel"] == "whatsapp" and conversation["external_id"] == NUMBER
        assert conversation["waiting_too_long"] is False

        status, held = await _json(
            gateway,
            "POST",
            f"{BASE}/handoff",
            channel="whatsapp",
            external_id=NUMBER,
            reason="a delayed order",
            actor="alice",
        )
        assert status == 200, held
        assert (held["id"], held["owner"], held["held_by"]) == (
            conversation["id"],
            "human",
            "alice",
        )
        conversation_id = held["id"]
        assert await _handoffs(gateway, "operator_takeover") == 1  # taken from the bot

        # The bot says nothing now: no model call, no reply, the turn answered by a human.
        calls, sent = len(model.calls), len(gateway.twilio.created)
        await gateway.post(NUMBER, "Alguém aí?")
        await gateway.stack.idle()
        assert len(model.calls) == calls
        assert len(gateway.twilio.created) == sent
        turn = await _turn_of(gateway, "Alguém aí?")
        assert turn.status == "human" and turn.reply_message_id is None

        # Another operator can neither take it nor write to it.
        status, refused = await _json(
            gateway, "POST", f"{BASE}/{conversation_id}/take", actor="bob", reason="mine"
        )
        assert (status, refused["error"]) == (409, "held_by_other")
        status, refused = await _json(
            gateway, "POST", f"{BASE}/{conversation_id}/messages", text="Oi", actor="bob"
        )
        assert (status, refused["error"]) == (409, "not_held")
        status, refused = await _json(
            gateway, "POST", f"{BASE}/{conversation_id}/messages", text="  ", actor="alice"
        )
        assert status == 400 and refused["error"] == "empty_text"
        for path in (f"{BASE}/nope", f"{BASE}/nope/take", f"{BASE}/nope/handback"):
            status, missing = await _json(
                gateway, "GET" if path.endswith("nope") else "POST", path, actor="a", reason="r"
            )
            assert (status, missing["error"]) == (404, "not_found"), path
        status, missing = await _json(
            gateway, "POST", f"{BASE}/nope/messages", text="Oi", actor="alice"
        )
        assert status == 404

        # The operator's message goes out through Twilio to the customer.
        status, written = await _json(
            gateway,
            "POST",
            f"{BASE}/{conversation_id}/messages",
            text="Oi, aqui é a Alice; seu pedido sai hoje.",
            actor="alice",
        )
        assert status == 202, written
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        out = gateway.twilio.created[-1]
        assert out["Body"] == "Oi, aqui é a Alice; seu pedido sai hoje."
        assert out["To"] == f"whatsapp:{NUMBER}"
        await until(lambda: _delivered(gateway, written["message_id"]))

        status, detail = await _json(gateway, "GET", f"{BASE}/{conversation_id}")
        assert status == 200
        authors = [(m["role"], m["author"], m["text"]) for m in detail["messages"]]
        assert authors[-1] == ("assistant", "operator", "Oi, aqui é a Alice; seu pedido sai hoje.")
        assert ("user", "customer", "Alguém aí?") in authors
        assert detail["messages"][-1]["actor"] == "alice"

        # Handed back: the bot answers again, and its window shows the operator's words as a
        # person's.
        status, back = await _json(
            gateway, "POST", f"{BASE}/{conversation_id}/handback", actor="alice", reason="done"
        )
        assert status == 200 and back["owner"] == "bot" and back["held_by"] is None
        await gateway.say(NUMBER, "Obrigado!")
        window = model.calls[-1].messages
        tagged = [m for m in window if "[human agent alice]" in m["content"]]
        assert tagged and tagged[0]["role"] == "assistant"
        assert (
            tagged[0]["content"] == "[human agent alice]\nOi, aqui é a Alice; seu pedido sai hoje."
        )

        async with gateway.stack.sessions()() as session:
            actions = list(
                await session.scalars(
                    select(AuditEntry.action)
                    .where(AuditEntry.subject_id == conversation_id)
                    .order_by(AuditEntry.id)
                )
            )
        assert actions == ["conversation.human", "conversation.bot"]


async def _delivered(gateway: WhatsAppStack, message_id: int) -> bool:
    async with gateway.stack.sessions()() as session:
        turn = await session.scalar(select(TurnRow).where(TurnRow.reply_message_id == message_id))
    return turn is not None and turn.status == "operator" and turn.delivery_status == "sent"


async def test_a_customer_asking_for_a_person_waits_and_is_told(
    tmp_path: Path, backend: str
) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Oi")
        calls = len(model.calls)
        await gateway.say(NUMBER, "Quero falar com um atendente, por favor")
        assert len(model.calls) == calls  # no model call for it
        told = gateway.twilio.created[-1]["Body"]
        assert told.startswith("Vou chamar uma pessoa")
        async with gateway.stack.sessions()() as session:
            reply = await session.scalar(
                select(Message).where(Message.role == "assistant").order_by(Message.id.desc())
            )
        assert reply is not None and (reply.extra or {}).get("canned") == "handoff"

        status, listed = await _json(gateway, "GET", f"{BASE}?owner=waiting")
        assert status == 200
        [waiting] = listed["conversations"]
        assert waiting["owner"] == "waiting" and waiting["held_by"] is None
        status, listed = await _json(gateway, "GET", f"{BASE}?owner=human")
        assert listed["conversations"] == []
        status, bad = await _json(gateway, "GET", f"{BASE}?owner=robot")
        assert (status, bad["error"]) == (400, "invalid_query")

        # Waiting: the bot stays silent too.
        sent = len(gateway.twilio.created)
        await gateway.post(NUMBER, "Alô?")
        await gateway.stack.idle()
        assert len(gateway.twilio.created) == sent and len(model.calls) == calls
        assert (await _turn_of(gateway, "Alô?")).status == "human"

        # An operator takes it by id; the metric counts none waiting now.
        status, taken = await _json(
            gateway, "POST", f"{BASE}/{waiting['id']}/take", actor="carol", reason="queue"
        )
        assert status == 200 and taken["owner"] == "human" and taken["held_by"] == "carol"
        assert taken["previous_owner"] == "waiting"
        # Counted once, as the customer's phrase: taking it from waiting is no new handoff.
        assert await _handoffs(gateway, "phrase") == 1
        assert await _handoffs(gateway, "operator_takeover") == 0


async def test_the_model_marker_hands_over_and_is_not_sent(tmp_path: Path, backend: str) -> None:
    model = FakeOpenAI(reply="Vou transferir você. [[handoff]]")
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Meu caso é complicado")
        assert gateway.twilio.created[-1]["Body"] == "Vou transferir você."
        status, listed = await _json(gateway, "GET", f"{BASE}?owner=waiting")
        assert status == 200 and len(listed["conversations"]) == 1
        assert await _handoffs(gateway, "model_marker") == 1


async def test_repeated_model_failures_hand_over(tmp_path: Path, backend: str) -> None:
    model = FakeOpenAI(status=400)  # refused at once, no retries
    async with _gateway(tmp_path, backend, model) as gateway:
        await gateway.say(NUMBER, "Primeira")
        first = gateway.twilio.created[-1]["Body"]
        assert not first.startswith("Vou chamar uma pessoa")  # one failure: the fallback
        await gateway.say(NUMBER, "Segunda")
        assert gateway.twilio.created[-1]["Body"].startswith("Vou chamar uma pessoa")
        status, listed = await _json(gateway, "GET", f"{BASE}?owner=waiting")
        assert status == 200 and len(listed["conversations"]) == 1
        assert await _handoffs(gateway, "failures") == 1
