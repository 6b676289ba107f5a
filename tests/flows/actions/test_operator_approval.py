"""A write the tenant leaves to an operator (`approval: "operator"`): the customer is told it
went to the team, their "SIM" sends nothing; an operator approves it in the console (sent once,
with the held row's id as Idempotency-Key and the customer's assertion, even when two approve
at once) or rejects it, and the customer is told the outcome."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import ActionConfirmation, Message, TurnRow
from tests.flows.actions.support import IDENTITY_KEY, save_settings, serving
from tests.support.console import PASSWORD, USERNAME
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

SECOND_OPERATOR = "bruno.ops"
CHANGE = "Trocar a chave Pix da conta"


class PixApi:
    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/pix-key", self.change)
        return app

    async def change(self, request: web.Request) -> web.Response:
        self.seen.append((dict(request.headers), await request.json()))
        await asyncio.sleep(0.05)  # a racing second approval arrives while this one is sent
        return web.json_response({"changed": True})


def _asks_to_change(call: Call) -> list[tuple[str, str]] | None:
    if "troca" in call.last_user_text and not call.tool_results:
        return [("change_pix_key", '{"key": "ana@example.org", "note": "dropped"}')]
    return None


@dataclass
class Talk:
    stack: Stack
    api: PixApi
    model: FakeOpenAI
    visitor: str = ""
    sent: int = 0

    async def say(self, text: str) -> str:
        if not self.visitor:
            self.visitor = await signed_visitor(self.stack.client)
        self.sent += 1
        response = await self.stack.client.post(
            "/webchat/messages",
            json={"visitor_id": self.visitor, "text": text, "client_message_id": f"c{self.sent}"},
        )
        assert response.status == 202, await response.text()
        message_id = int((await response.json())["message_id"])
        await self.stack.idle()
        async with self.stack.sessions()() as session:
            turn = await session.scalar(
                select(TurnRow).where(TurnRow.inbound_message_id == message_id)
            )
            assert turn is not None and turn.reply_message_id is not None
            reply = await session.get(Message, turn.reply_message_id)
            assert reply is not None
            return reply.text

    async def held(self) -> list[tuple[str, str]]:
        async with self.stack.sessions()() as session:
            rows = await session.scalars(
                select(ActionConfirmation).order_by(ActionConfirmation.created_at)
            )
            return [(row.id, row.status) for row in rows]


@asynccontextmanager
async def talking(tmp_path: Path, backend: str = "embedded") -> AsyncIterator[Talk]:
    """A gateway whose tenant offers `change_pix_key`, a write an operator approves; two
    operator accounts."""
    api = PixApi()
    model = FakeOpenAI(tool_calls_for=_asks_to_change)
    async with (
        serving(api.app()) as url,
        model.serving() as model_url,
        running_stack(
            backend,
            tmp_path,
            RELAYDESK_TOOL_IDENTITY_KEY=IDENTITY_KEY,
            RELAYDESK_FETCH_ALLOW="127.0.0.1",
            **model_settings(model_url),
        ) as stack,
    ):
        change = {
            "name": "change_pix_key",
            "description": CHANGE,
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
            },
            "kind": "write",
            "min_link_level": "anonymous",
            "approval": "operator",
            "endpoint": {"url": f"{url}/pix-key"},
        }
        await save_settings(stack, {"tools": [change]})
        async with stack.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
            await create_operator(session, SECOND_OPERATOR, PASSWORD)
        yield Talk(stack, api, model)


async def test_the_customer_is_told_it_went_to_the_team_and_their_yes_sends_nothing(
    tmp_path: Path,
) -> None:
    async with talking(tmp_path) as talk:
        told = await talk.say("troca minha chave pix para ana@example.org")

        assert talk.api.seen == []
        assert "aprovação da nossa equipe" in told and CHANGE in told
        assert "key: ana@example.org" in told and "SIM" not in told
        [(_, status)] = await talk.held()
        assert status == "approval"

        await talk.say("SIM")

        assert talk.api.seen == []  # the customer's yes is not the operator's approval
        [(_, status)] = await talk.held()
        assert status == "approval"
