"""What the step-up flows share: Ana, verified on WhatsApp; an anonymous web chat visitor;
a model that asks for a code when given a number and for the order once verified; a local
business API answering the order."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from sqlalchemy import select

from gateway.storage.models import Base, ChannelIdentity, CustomerIdentifier
from tests.flows.actions.support import (
    IDENTITY_KEY,
    reply_to,
    save_settings,
    say_on_webchat,
    serving,
)
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.stack import Stack
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


def model_calls(call: Call) -> list[tuple[str, str]] | None:
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


def model_answer(call: Call) -> str | None:
    results = call.tool_results
    return f"resultado: {results[0]['content']}" if results else "certo"


@dataclass
class Visitor:
    stack: Stack
    visitor: str = ""
    sent: int = 0
    replies: list[str] = field(default_factory=list)

    async def say(self, text: str) -> str:
        client = self.stack.client
        if not self.visitor:
            self.visitor = await signed_visitor(client)
        self.sent += 1
        message_id = await say_on_webchat(self.stack, self.visitor, text, f"c{self.sent}")
        return await reply_to(self.stack, message_id)

    async def identity(self) -> ChannelIdentity:
        async with self.stack.sessions()() as session:
            found = await session.scalar(
                select(ChannelIdentity).where(ChannelIdentity.channel == "webchat")
            )
        assert found is not None
        return found


@asynccontextmanager
async def ana_and_a_visitor(
    tmp_path: Path, tenant: dict[str, object] | None = None, **settings: object
) -> AsyncIterator[tuple[WhatsAppStack, FakeOpenAI, OrderApi, Visitor]]:
    api = OrderApi()
    model = FakeOpenAI(tool_calls_for=model_calls, reply_for=model_answer)
    async with (
        serving(api.app()) as url,
        model.serving() as model_url,
        whatsapp_stack(
            tmp_path,
            public_url="http://relay.example.org",  # the console's cookies over plain HTTP
            RELAYDESK_TOOL_IDENTITY_KEY=IDENTITY_KEY,
            RELAYDESK_FETCH_ALLOW="127.0.0.1",
            **model_settings(model_url),
            **settings,
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
        await save_settings(wa.stack, {"tools": [order], **(tenant or {})})
        await wa.say(ANA, "oi, sou a Ana")  # Ana's number, verified by WhatsApp
        yield wa, model, api, Visitor(wa.stack)


def code_sent(wa: WhatsAppStack, before: int) -> tuple[str, str]:
    """(recipient, code) of the one message sent since ``before``."""
    [sent] = wa.twilio.created[before:]
    code = re.search(r"\b(\d{6})\b", sent["Body"])
    assert code is not None, sent["Body"]
    return sent["To"], code.group(1)


async def everything_stored(stack: Stack) -> str:
    """Every row of every table, as text."""
    dumped: list[str] = []
    async with stack.sessions()() as session:
        for table in Base.metadata.sorted_tables:
            for row in (await session.execute(select(table))).all():
                dumped.append(repr(tuple(row)))
    return "\n".join(dumped)


async def customer_of_ana(wa: WhatsAppStack) -> str:
    async with wa.stack.sessions()() as session:
        held = await session.scalar(
            select(CustomerIdentifier.customer_id).where(CustomerIdentifier.value == ANA)
        )
    assert held is not None
    return held
