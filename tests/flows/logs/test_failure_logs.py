"""A reply that could not be delivered and a model call that failed say which conversation
they are about: the channel, the conversation key (masked as every logged string) and the
turn, through the real gateway."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from devtools.twilio_webhook import signed_form
from gateway.runtime.logs import JsonFormatter, mask
from gateway.storage.models import TurnRow
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params
from tests.support.stack import Stack, running_stack
from tests.support.twilio_server import FakeTwilio
from tests.support.webchat import signed_visitor

TOKEN = "twilio-auth-token-for-tests"
SID = "AC" + "a" * 32
PUBLIC_URL = "https://relay.example.org"
SENDER = "whatsapp:+5511998765432"


@pytest.fixture
async def twilio() -> AsyncIterator[tuple[FakeTwilio, str]]:
    fake = FakeTwilio()
    server = TestServer(fake.app())
    await server.start_server()
    yield fake, str(server.make_url("")).rstrip("/")
    await server.close()


@pytest.fixture
async def model() -> AsyncIterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    server = TestServer(fake.app())
    await server.start_server()
    yield fake, str(server.make_url("/v1"))
    fake.release()
    await server.close()


def lines(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    """The lines of `event` as the JSON formatter prints them."""
    formatter = JsonFormatter()
    printed = [json.loads(formatter.format(r)) for r in caplog.records]
    return [line for line in printed if line["event"] == event]


async def only_turn(stack: Stack) -> TurnRow:
    async with stack.sessions()() as session:
        [turn] = (await session.scalars(select(TurnRow))).all()
    return turn


async def test_an_undelivered_reply_names_its_channel_conversation_and_turn(
    tmp_path: Path, twilio: tuple[FakeTwilio, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, base = twilio
    fake.fail_next = [500] * 4  # every attempt of the first delivery fails
    settings = {
        "TWILIO_ACCOUNT_SID": SID,
        "TWILIO_AUTH_TOKEN": TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": base,
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
    }
    caplog.set_level(logging.INFO, logger="relaydesk")
    async with running_stack("embedded", tmp_path, **settings) as stack:
        params = inbound_params("SM" + uuid.uuid4().hex, SENDER, "oi", account=SID)
        headers, body = signed_form(PUBLIC_URL + "/webhooks/twilio/whatsapp", params, TOKEN)
        response = await stack.client.post("/webhooks/twilio/whatsapp", data=body, headers=headers)
        assert response.status == 200
        await stack.idle()
        turn = await only_turn(stack)
    [line] = lines(caplog, "reply not delivered")
    assert line["level"] == "warning" and line["status"] == "retry"
    assert (line["channel"], line["turn"]) == ("whatsapp", turn.id)
    assert line["conversation"] == mask(turn.conversation_key)
    assert turn.conversation_key.endswith(":whatsapp")


async def test_a_failed_model_call_names_its_channel_conversation_and_turn(
    tmp_path: Path, model: tuple[FakeOpenAI, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = model
    fake.status = 400  # not retryable: fails at once
    caplog.set_level(logging.INFO, logger="relaydesk")
    async with running_stack("embedded", tmp_path, **model_settings(url)) as stack:
        visitor = await signed_visitor(stack.client)
        posted = await stack.client.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "oi", "client_message_id": "c1"},
        )
        assert posted.status == 202
        await stack.idle()
        turn = await only_turn(stack)
    [line] = lines(caplog, "model call failed")
    assert (line["channel"], line["turn"]) == ("webchat", turn.id)
    assert line["conversation"] == mask(turn.conversation_key)
    assert line["error"]
