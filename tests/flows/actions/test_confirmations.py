"""A write the model asks for waits for the customer: sent once after "SIM", with an
Idempotency-Key; a second "SIM" sends nothing; any other reply cancels it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import select

from gateway.storage.models import ActionConfirmation
from gateway.storage.repositories.audit import list_audit
from tests.flows.actions.approvals_support import PixApi
from tests.flows.actions.support import (
    acting_stack,
    reply_to,
    save_settings,
    say_on_webchat,
    serving,
)
from tests.support.openai_server import Call, FakeOpenAI
from tests.support.stack import API_KEY, Stack
from tests.support.webchat import signed_visitor


def _asks_to_change(call: Call) -> list[tuple[str, str]] | None:
    if "troca" in call.last_user_text and not call.tool_results:
        return [("change_pix_key", '{"key": "ana@example.org"}')]
    return None


def _tells_the_outcome(call: Call) -> str | None:
    results = call.tool_results
    return f"resultado: {results[0]['content']}" if results else None


class Conversation:
    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.visitor: str | None = None
        self.sent = 0
        self.tools: list[dict[str, Any]] = []  # the tenant's, as saved

    async def say(self, text: str) -> str:
        if self.visitor is None:
            self.visitor = await signed_visitor(self.stack.client)
        self.sent += 1
        message_id = await say_on_webchat(self.stack, self.visitor, text, f"c{self.sent}")
        return await reply_to(self.stack, message_id)


@asynccontextmanager
async def _talking(tmp_path: Path) -> AsyncIterator[tuple[PixApi, FakeOpenAI, Conversation]]:
    api = PixApi()
    model = FakeOpenAI(tool_calls_for=_asks_to_change, reply_for=_tells_the_outcome)
    async with (
        serving(api.app()) as url,
        model.serving() as model_url,
        acting_stack(tmp_path, model_url) as stack,
    ):
        change = {
            "name": "change_pix_key",
            "description": "Trocar a chave Pix da conta",
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
            },
            "kind": "write",
            "min_link_level": "anonymous",
            "endpoint": {"url": f"{url}/pix-key"},
        }
        await save_settings(stack, {"tools": [change]})
        conversation = Conversation(stack)
        conversation.tools = [change]
        yield api, model, conversation


async def _confirmation_ids(conversation: Conversation) -> list[tuple[str, str]]:
    async with conversation.stack.sessions()() as session:
        rows = await session.scalars(
            select(ActionConfirmation).order_by(ActionConfirmation.created_at)
        )
        return [(row.id, row.status) for row in rows]


async def test_a_write_is_sent_once_after_the_customers_yes(tmp_path: Path) -> None:
    async with _talking(tmp_path) as (api, model, conversation):
        asked = await conversation.say("troca minha chave pix para ana@example.org")

        assert api.seen == []  # not sent when the model asked
        assert "Trocar a chave Pix da conta" in asked and "key: ana@example.org" in asked
        assert "SIM" in asked
        [(confirmation_id, status)] = await _confirmation_ids(conversation)
        assert status == "waiting"

        done = await conversation.say("Sim!")

        [(headers, body)] = api.seen
        assert body == {"key": "ana@example.org"}
        assert headers["Idempotency-Key"] == confirmation_id
        assert "X-Relaydesk-Identity" in headers
        assert done == 'resultado: {"changed": true}'
        assert await _confirmation_ids(conversation) == [(confirmation_id, "sent")]

        await conversation.say("sim")

        assert len(api.seen) == 1  # a second yes sends nothing
        async with conversation.stack.sessions()() as session:
            trail = await list_audit(session, action=None, limit=50)
        calls = [entry for entry in trail if entry.action.startswith("action.")]
        assert sorted(entry.action for entry in calls) == [
            "action.awaiting_confirmation",
            "action.ok",
        ]
        for entry in calls:
            assert entry.details["tool"] == "change_pix_key"
            assert entry.details["link_level"] == "anonymous"
            assert entry.details["arguments"] == '{"key":"***@example.org"}'  # masked


async def test_anything_but_a_yes_cancels_the_write(tmp_path: Path) -> None:
    async with _talking(tmp_path) as (api, model, conversation):
        await conversation.say("troca minha chave pix para ana@example.org")

        answer = await conversation.say("não, espera, vou ver outra coisa")

        assert api.seen == []
        [(_, status)] = await _confirmation_ids(conversation)
        assert status == "cancelled"
        told = json.loads(model.calls[-1].tool_results[0]["content"])
        assert told["error"].startswith("not sent: the customer did not confirm it")
        assert answer.startswith("resultado:")

        await conversation.say("sim")

        assert api.seen == []  # the yes came after the cancellation: nothing to send


async def test_a_yes_sends_nothing_once_the_action_is_no_longer_offered(tmp_path: Path) -> None:
    async with _talking(tmp_path) as (api, model, conversation):
        await conversation.say("troca minha chave pix para ana@example.org")
        # The tenant now wants the write verified: the anonymous visitor no longer reaches it.
        [change] = conversation.tools
        await save_settings(
            conversation.stack, {"tools": [{**change, "min_link_level": "verified"}]}
        )

        await conversation.say("sim")

        assert api.seen == []
        [(_, status)] = await _confirmation_ids(conversation)
        assert status == "cancelled"
        told = json.loads(model.calls[-1].tool_results[0]["content"])
        assert told["error"] == "not sent: the action is no longer offered to this conversation"
        async with conversation.stack.sessions()() as session:
            trail = await list_audit(session, action=None, limit=50)
        assert sorted(e.action for e in trail if e.action.startswith("action.")) == [
            "action.awaiting_confirmation",
            "action.failed",
        ]


async def test_erasing_the_customer_erases_the_write_they_were_asked_about(tmp_path: Path) -> None:
    async with _talking(tmp_path) as (_, _, conversation):
        await conversation.say("troca minha chave pix para ana@example.org")
        async with conversation.stack.sessions()() as session:
            customer_id = await session.scalar(select(ActionConfirmation.customer_id))
        assert customer_id is not None

        response = await conversation.stack.client.delete(
            f"/v1/operator/customers/{customer_id}",
            json={"reason": "data subject request", "actor": "dpo"},
            headers={"Authorization": f"Bearer {API_KEY}"},
        )

        assert response.status == 200, await response.text()
        assert (await response.json())["removed"]["action_confirmations"] == 1
        assert await _confirmation_ids(conversation) == []


async def test_a_sent_write_stays_on_record_when_the_model_then_fails(tmp_path: Path) -> None:
    async with _talking(tmp_path) as (api, model, conversation):
        await conversation.say("troca minha chave pix para ana@example.org")
        model.status = 400  # the model refuses every call from now on

        reply = await conversation.say("sim")

        assert len(api.seen) == 1 and "problema técnico" in reply  # sent; the fallback told
        async with conversation.stack.sessions()() as session:
            trail = await list_audit(session, action="action.ok", limit=5)
        [sent] = trail
        assert sent.details["tool"] == "change_pix_key" and sent.details["kind"] == "write"
