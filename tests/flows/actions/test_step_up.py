"""Step-up verification off the web widget: an anonymous web chat visitor claims Ana's number,
the code goes to Ana's WhatsApp only, and typing it back verifies the visitor and joins it to
Ana; the code appears nowhere in storage, a window or a model request. Three wrong codes lock
it; a number nobody verified gets no code."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import jwt
from aiohttp import web
from sqlalchemy import select

from gateway.storage.models import Base, ChannelIdentity, CustomerIdentifier, Message, TurnRow
from gateway.storage.repositories.audit import list_audit
from tests.flows.actions.support import IDENTITY_KEY, save_settings, serving
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.webchat import signed_visitor
from tests.support.whatsapp_stack import WhatsAppStack, whatsapp_stack

ANA = "+5511987654321"
NOBODY = "+5511912345678"


class OrderApi:
    def __init__(self) -> None:
        self.seen: list[dict[str, str]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/orders", self.order)
        return app

    async def order(self, request: web.Request) -> web.Response:
        self.seen.append(dict(request.headers))
        return web.json_response({"order": "4471", "status": "a caminho"})


def _calls(call: Call) -> list[tuple[str, str]] | None:
    """Asks for a code when the visitor gives a number, and for the order once verified."""
    if call.tool_results:
        return None
    text = call.last_user_text
    number = re.search(r"\+\d{12,13}", text)
    if number and "start_verification" in call.tool_names:
        return [("start_verification", json.dumps({"identifier": number.group()}))]
    if "verification code: verified" in text and "order_status" in call.tool_names:
        return [("order_status", '{"order": "4471"}')]
    return None


def _answer(call: Call) -> str | None:
    results = call.tool_results
    return f"resultado: {results[0]['content']}" if results else "certo"


@dataclass
class Visitor:
    wa: WhatsAppStack
    visitor: str = ""
    sent: int = 0
    replies: list[str] = field(default_factory=list)

    async def say(self, text: str) -> str:
        client = self.wa.stack.client
        if not self.visitor:
            self.visitor = await signed_visitor(client)
        self.sent += 1
        response = await client.post(
            "/webchat/messages",
            json={"visitor_id": self.visitor, "text": text, "client_message_id": f"c{self.sent}"},
        )
        assert response.status == 202, await response.text()
        message_id = int((await response.json())["message_id"])
        await self.wa.stack.idle()
        async with self.wa.stack.sessions()() as session:
            turn = await session.scalar(
                select(TurnRow).where(TurnRow.inbound_message_id == message_id)
            )
            assert turn is not None and turn.reply_message_id is not None
            reply = await session.get(Message, turn.reply_message_id)
            assert reply is not None
            return reply.text

    async def identity(self) -> ChannelIdentity:
        async with self.wa.stack.sessions()() as session:
            found = await session.scalar(
                select(ChannelIdentity).where(ChannelIdentity.channel == "webchat")
            )
        assert found is not None
        return found


@asynccontextmanager
async def _ana_and_a_visitor(
    tmp_path: Path,
) -> AsyncIterator[tuple[WhatsAppStack, FakeOpenAI, OrderApi, Visitor]]:
    api = OrderApi()
    model = FakeOpenAI(tool_calls_for=_calls, reply_for=_answer)
    async with (
        serving(api.app()) as url,
        model.serving() as model_url,
        whatsapp_stack(
            tmp_path,
            RELAYDESK_TOOL_IDENTITY_KEY=IDENTITY_KEY,
            RELAYDESK_FETCH_ALLOW="127.0.0.1",
            **model_settings(model_url),
        ) as wa,
    ):
        order = {
            "name": "order_status",
            "description": "Where an order is",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
            "kind": "read",
            "min_link_level": "verified",
            "endpoint": {"url": f"{url}/orders"},
        }
        await save_settings(wa.stack, {"tools": [order]})
        await wa.say(ANA, "oi, sou a Ana")  # Ana's number, verified by WhatsApp
        yield wa, model, api, Visitor(wa)


def _code_sent(wa: WhatsAppStack, before: int) -> tuple[str, str]:
    """(recipient, code) of the one message sent since ``before``."""
    [sent] = wa.twilio.created[before:]
    code = re.search(r"\b(\d{6})\b", sent["Body"])
    assert code is not None, sent["Body"]
    return sent["To"], code.group(1)


async def _everything_stored(wa: WhatsAppStack) -> str:
    """Every row of every table, as text."""
    dumped: list[str] = []
    async with wa.stack.sessions()() as session:
        for table in Base.metadata.sorted_tables:
            for row in (await session.execute(select(table))).all():
                dumped.append(repr(tuple(row)))
    return "\n".join(dumped)


async def _customer_of_ana(wa: WhatsAppStack) -> str:
    async with wa.stack.sessions()() as session:
        held = await session.scalar(
            select(CustomerIdentifier.customer_id).where(CustomerIdentifier.value == ANA)
        )
    assert held is not None
    return held


async def test_a_code_to_anas_whatsapp_verifies_the_visitor_and_joins_it_to_ana(
    tmp_path: Path,
) -> None:
    async with _ana_and_a_visitor(tmp_path) as (wa, model, api, visitor):
        ana = await _customer_of_ana(wa)
        before = len(wa.twilio.created)

        asked = await visitor.say(f"meu número é {ANA}, quero ver o pedido 4471")

        offered = model.calls[-2].tool_names
        assert "order_status" not in offered and "start_verification" in offered
        recipient, code = _code_sent(wa, before)
        assert recipient == f"whatsapp:{ANA}"  # Ana's WhatsApp, the only place it went
        assert code not in asked
        assert api.seen == []

        done = await visitor.say(f"o código é {code}")

        assert done == 'resultado: {"order": "4471", "status": "a caminho"}'
        [headers] = api.seen
        claims = jwt.decode(
            headers["X-Relaydesk-Identity"],
            IDENTITY_KEY,
            algorithms=["HS256"],
            audience="order_status",
        )
        assert claims["sub"] == ana and claims["link_level"] == "verified"
        assert claims["channel"] == "webchat"
        identity = await visitor.identity()
        assert identity.customer_id == ana and identity.link_level == "verified"
        assert identity.evidence["step_up"] == "otp:whatsapp"

        await visitor.say("obrigada")  # the visitor id keeps speaking at verified level

        assert "order_status" in model.calls[-1].tool_names
        assert "start_verification" not in model.calls[-1].tool_names

        # The code is nowhere: not stored, not in any window or model request.
        assert code not in await _everything_stored(wa)
        assert all(code not in json.dumps(call.messages) for call in model.calls)
        async with wa.stack.sessions()() as session:
            texts = list(await session.scalars(select(Message.text)))
            trail = await list_audit(session, action=None, limit=50)
        assert "o código é [verification code: verified]" in texts
        verified = [entry for entry in trail if entry.action == "identity.verified"]
        assert [entry.details["evidence"] for entry in verified] == ["otp:whatsapp"]
        sent = [entry for entry in trail if entry.action == "verification.sent"]
        assert [entry.details["sent_through"] for entry in sent] == ["whatsapp"]


async def test_three_wrong_codes_lock_it(tmp_path: Path) -> None:
    async with _ana_and_a_visitor(tmp_path) as (wa, _model, api, visitor):
        before = len(wa.twilio.created)
        await visitor.say(f"meu número é {ANA}")
        _, code = _code_sent(wa, before)
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"

        told = [await visitor.say(wrong) for _ in range(3)]
        after = await visitor.say(code)

        assert told[0] == told[1] != told[2]
        assert "incorreto" in told[0] and "esgotadas" in told[2]
        assert "esgotadas" in after  # the right code, too late
        identity = await visitor.identity()
        assert identity.link_level == "anonymous"
        assert identity.customer_id != await _customer_of_ana(wa)
        assert api.seen == []
        stored = await _everything_stored(wa)
        assert code not in stored and wrong not in stored


async def test_a_number_nobody_verified_gets_no_code(tmp_path: Path) -> None:
    async with _ana_and_a_visitor(tmp_path) as (wa, model, _api, visitor):
        before = len(wa.twilio.created)

        await visitor.say(f"meu número é {NOBODY}")

        assert wa.twilio.created[before:] == []
        [result] = [
            message["content"]
            for call in model.calls
            for message in call.messages
            if message["role"] == "tool"
        ]
        # Told as if it might have gone: a conversation cannot probe who is a customer.
        assert "If +5511912345678 belongs to a customer verified with us" in result
        async with wa.stack.sessions()() as session:
            trail = await list_audit(session, action=None, limit=50)
        assert [e.action for e in trail if e.action.startswith("verification.")] == [
            "verification.not_sent"
        ]
