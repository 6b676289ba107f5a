"""What the operator-approval flows share: a gateway whose tenant offers `change_pix_key`, a
write an operator approves, on a local business API; a web chat customer; two operators."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import ActionConfirmation, Conversation
from tests.flows.actions.support import (
    IDENTITY_KEY,
    reply_to,
    save_settings,
    say_on_webchat,
    serving,
)
from tests.support.console import PASSWORD, USERNAME
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

SECOND_OPERATOR = "bruno.ops"
CHANGE = "Trocar a chave Pix da conta"
ASK = "troca minha chave pix para ana@example.org"


class PixApi:
    """The business endpoint; each call takes a moment, so a racing second approval arrives
    while the first is being sent."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/pix-key", self.change)
        return app

    async def change(self, request: web.Request) -> web.Response:
        self.seen.append((dict(request.headers), await request.json()))
        await asyncio.sleep(0.05)
        return web.json_response({"changed": True})


def _asks_to_change(call: Call) -> list[tuple[str, str]] | None:
    # An argument the schema does not declare ("note") is dropped and shows in the trace.
    if "troca" in call.last_user_text and not call.tool_results:
        return [("change_pix_key", '{"key": "ana@example.org", "note": "urgente"}')]
    return None


@dataclass
class Talk:
    """One web chat customer talking to the gateway."""

    stack: Stack
    api: PixApi
    model: FakeOpenAI
    visitor: str = ""
    message_ids: list[int] = field(default_factory=list)

    async def say(self, text: str) -> str:
        """Send ``text``; the reply once answered."""
        if not self.visitor:
            self.visitor = await signed_visitor(self.stack.client)
        message_id = await say_on_webchat(
            self.stack, self.visitor, text, f"c{len(self.message_ids)}"
        )
        self.message_ids.append(message_id)
        return await reply_to(self.stack, message_id)

    async def thread(self) -> list[str]:
        """The texts the visitor's widget reads back (`GET /webchat/messages`)."""
        response = await self.stack.client.get(
            "/webchat/messages", params={"visitor_id": self.visitor}
        )
        assert response.status == 200, await response.text()
        return [frame["text"] for frame in (await response.json())["messages"]]

    async def held(self) -> list[tuple[str, str]]:
        """(id, status) of every held write, oldest first."""
        async with self.stack.sessions()() as session:
            rows = await session.scalars(
                select(ActionConfirmation).order_by(ActionConfirmation.created_at)
            )
            return [(row.id, row.status) for row in rows]

    async def conversation(self) -> tuple[str, str]:
        """The conversation's id and key."""
        async with self.stack.sessions()() as session:
            row = await session.scalar(select(Conversation))
        assert row is not None
        return row.id, row.conversation_key


@asynccontextmanager
async def talking(tmp_path: Path, backend: str = "embedded") -> AsyncIterator[Talk]:
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
