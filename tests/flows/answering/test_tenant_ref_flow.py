"""The tenant a message entered through is recorded with it and followed by every later step:
a host's own instruction and model reach the model call of a turn accepted through that host,
while a message through another host keeps the domain's."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.storage.models import Conversation, Episode, Message, TurnRow
from gateway.storage.repositories import tenants
from gateway.tenant_ref import TenantRef
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

SHOP_HOST = "shop.example.com"
SHOP_INSTRUCTION = "You answer for Shop Example: shoes only, always in a friendly tone."


async def _send_through(stack: Stack, host: str, text: str) -> int:
    visitor = await signed_visitor(stack.client)
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": "c1"},
        headers={"Host": host},
    )
    assert response.status == 202, await response.text()
    return int((await response.json())["message_id"])


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_hosts_instruction_and_model_reach_the_model_call(
    tmp_path: Path, backend: str
) -> None:
    model = FakeOpenAI()
    async with (
        model.serving() as model_url,
        running_stack(backend, tmp_path, **model_settings(model_url)) as stack,
    ):
        async with stack.sessions().begin() as session:
            await tenants.save_tenant_settings(
                session,
                domain="default",
                host=SHOP_HOST,
                settings={"instruction": SHOP_INSTRUCTION, "model": "openai:shop-model"},
            )

        shop_message = await _send_through(stack, SHOP_HOST, "vocês têm tênis 42?")
        await stack.idle()
        other_message = await _send_through(stack, "other.example.org", "qual o horário?")
        await stack.idle()

        calls = {call.last_user_text: call for call in model.calls}
        shop_call = calls["vocês têm tênis 42?"]
        assert shop_call.model == "shop-model"
        system = " ".join(m["content"] for m in shop_call.messages if m["role"] == "system")
        assert SHOP_INSTRUCTION in system
        # Another host's message keeps the domain's model and instruction.
        other_call = calls["qual o horário?"]
        assert other_call.model == "test-model"
        assert SHOP_INSTRUCTION not in " ".join(m["content"] for m in other_call.messages)

        shop = TenantRef.for_host(SHOP_HOST).encode()
        async with stack.sessions()() as session:
            inbound = await session.get(Message, shop_message)
            assert inbound is not None and inbound.tenant == shop
            turn = await session.scalar(
                select(TurnRow).where(TurnRow.inbound_message_id == shop_message)
            )
            assert turn is not None and turn.tenant == shop
            reply = await session.get(Message, turn.reply_message_id)
            assert reply is not None and reply.tenant == shop
            episode = await session.get(Episode, inbound.episode_id)
            assert episode is not None and episode.tenant == shop
            conversation = await session.scalar(
                select(Conversation).where(Conversation.conversation_key == turn.conversation_key)
            )
            assert conversation is not None and conversation.tenant == shop
            other = await session.get(Message, other_message)
            assert other is not None
            assert other.tenant == TenantRef.for_host("other.example.org").encode()
