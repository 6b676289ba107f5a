"""Settings changed through the command line and `/v1/settings` while a gateway runs: the next
turn of a web chat conversation through the host follows them (the instruction its model call
gets, the handoff message the customer is told), with no restart and no wait for the settings
cache to expire."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.cli import main
from gateway.keys import SETTINGS
from gateway.storage.models import Message
from gateway.storage.repositories import audit
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

HOST = "shop.example.com"
INSTRUCTION = "You answer for Shop Example: shoes only."
HANDOFF = "Um colega da loja já vai falar com você."


async def _say(stack: Stack, visitor: str, text: str, number: int) -> None:
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": f"m{number}"},
        headers={"Host": HOST},
    )
    assert response.status == 202, await response.text()
    await stack.idle()


def _system_text(model: FakeOpenAI, text: str) -> str:
    [call] = [call for call in model.calls if call.last_user_text == text]
    return " ".join(m["content"] for m in call.messages if m["role"] == "system")


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_cli_and_api_changes_reach_the_next_turn(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        running_stack(backend, tmp_path, **model_settings(model_url)) as stack,
    ):
        visitor = await signed_visitor(stack.client)
        await _say(stack, visitor, "vocês têm tênis 42?", 1)  # the host's settings now cached
        assert INSTRUCTION not in _system_text(model, "vocês têm tênis 42?")

        # The host's handoff message from the command line, as an operator would set it.
        running = stack.app[SETTINGS]
        monkeypatch.setenv("RELAYDESK_DATABASE_URL", running.database_url)
        if running.redis_url:
            monkeypatch.setenv("RELAYDESK_REDIS_URL", running.redis_url)
        else:
            monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
        code = await asyncio.to_thread(
            main,
            ["settings", "set", "handoff_message", HANDOFF, "--host", HOST, "--actor", "ana"],
        )
        assert code == 0
        # The instruction through the API.
        response = await stack.client.patch(
            f"/v1/settings/domain/default/host/{HOST}",
            json={"settings": {"instruction": INSTRUCTION}, "reason": "shop launch"},
            headers=AUTH,
        )
        assert response.status == 200, await response.text()

        await _say(stack, visitor, "e o 43?", 2)
        assert INSTRUCTION in _system_text(model, "e o 43?")

        calls_before = len(model.calls)
        await _say(stack, visitor, "quero falar com um atendente", 3)
        assert len(model.calls) == calls_before  # a handoff phrase: no model call
        async with stack.sessions()() as session:
            replies = list(
                await session.scalars(
                    select(Message.text).where(Message.role == "assistant").order_by(Message.id)
                )
            )
            entries = await audit.list_audit(session, action="settings_changed")
        assert replies[-1] == HANDOFF
        assert [(e.actor, e.details["changed"]) for e in entries] == [
            ("api", ["instruction"]),
            ("ana", ["handoff_message"]),
        ]
