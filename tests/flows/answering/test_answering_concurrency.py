"""Answering at a model's speed: many model calls wait at once, one conversation still answers
its turns one at a time and in order, and several background processes never answer a turn
twice. WhatsApp webhooks signed as Twilio signs them, replies sent through the twilio SDK to a
local Twilio API, the model a local OpenAI-compatible server that waits before answering."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import func, select

from gateway.keys import SESSIONS, WAKEUPS
from gateway.storage.models import Message, TurnRow
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.shared_gateways import shared_gateways
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.twilio_server import FakeTwilio

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "e" * 32
BOT = "whatsapp:+14155238886"
PUBLIC_URL = "https://relay.example.org"


@asynccontextmanager
async def _servers(model: FakeOpenAI, twilio: FakeTwilio) -> AsyncIterator[dict[str, object]]:
    """The model and Twilio servers started; the settings that point a gateway at them."""
    twilio_server = TestServer(twilio.app())
    await twilio_server.start_server()
    try:
        async with model.serving() as model_url:
            yield {
                "RELAYDESK_RUN_COMPACTION": False,
                "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
                **model_settings(model_url),
                "TWILIO_ACCOUNT_SID": ACCOUNT,
                "TWILIO_AUTH_TOKEN": TOKEN,
                "TWILIO_WHATSAPP_FROM": BOT,
                "TWILIO_API_BASE": str(twilio_server.make_url("")).rstrip("/"),
            }
    finally:
        await twilio_server.close()


def _sender() -> str:
    return f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"


async def _post(client: TestClient, sender: str, text: str) -> None:  # type: ignore[type-arg]
    params = inbound_params(f"SM{uuid.uuid4().hex}", sender, text, account=ACCOUNT)
    response = await post_signed(client, params, token=TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200, await response.text()


async def _until(condition: Callable[[], bool | Awaitable[bool]], timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while True:
            outcome = condition()
            if outcome if isinstance(outcome, bool) else await outcome:
                return
            await asyncio.sleep(0.05)


def _most_at_once(calls: list[Call]) -> int:
    """The largest number of model calls that were waiting at the same moment."""
    events = sorted(
        [(call.started, 1) for call in calls]
        + [(call.finished or call.started, -1) for call in calls],
        key=lambda event: (event[0], event[1]),
    )
    most = current = 0
    for _, step in events:
        current += step
        most = max(most, current)
    return most


def _replies_to(twilio: FakeTwilio, sender: str) -> list[str]:
    return [c["Body"] for c in twilio.created if c["To"] == sender]


async def test_many_conversations_wait_on_the_model_at_once() -> None:
    model, twilio = FakeOpenAI(delay_s=1.5), FakeTwilio()
    senders = [_sender() for _ in range(30)]
    async with _servers(model, twilio) as values, shared_gateways([values]) as [gateway]:
        for sender in senders:
            await _post(gateway, sender, f"pedido de {sender[-4:]}")
        await _until(lambda: len(twilio.created) == len(senders), timeout=30)
    # Far beyond the four conversations a process used to answer at once.
    assert _most_at_once(model.calls) >= 20, [(c.started, c.finished) for c in model.calls]
    for sender in senders:
        assert _replies_to(twilio, sender) == [f"re: pedido de {sender[-4:]}"]


async def test_one_conversation_answers_its_turns_one_at_a_time_in_order() -> None:
    model, twilio = FakeOpenAI(delay_s=0.3), FakeTwilio()
    sender = _sender()
    async with _servers(model, twilio) as values, shared_gateways([values]) as [gateway]:
        for i in range(4):
            await _post(gateway, sender, f"pedido {i}")
        await _until(lambda: len(twilio.created) == 4, timeout=30)
    assert [c.last_user_text for c in model.calls] == [f"pedido {i}" for i in range(4)]
    for earlier, later in zip(model.calls, model.calls[1:], strict=False):
        assert earlier.finished is not None and later.started >= earlier.finished
    assert _replies_to(twilio, sender) == [f"re: pedido {i}" for i in range(4)]


async def _count(client: TestClient, query: Any) -> int:  # type: ignore[type-arg]
    async with client.app[SESSIONS]() as session:
        return int(await session.scalar(query) or 0)


async def test_two_background_processes_share_the_turns_and_answer_each_once() -> None:
    model, twilio = FakeOpenAI(delay_s=0.2), FakeTwilio()
    senders = [_sender() for _ in range(8)]
    per_sender = 3
    async with _servers(model, twilio) as values:
        apps = [
            {**values, "RELAYDESK_RUN_BACKGROUND": False},  # acknowledges only
            {**values, "RELAYDESK_RUN_BACKGROUND": True},
            {**values, "RELAYDESK_RUN_BACKGROUND": True},
        ]
        async with shared_gateways(apps) as [gateway, first, second]:
            for background in (first, second):
                async with asyncio.timeout(5):
                    await background.app[WAKEUPS].subscribed.wait()
            for i in range(per_sender):
                for sender in senders:
                    await _post(gateway, sender, f"pedido {i}")
            expected = len(senders) * per_sender
            await _until(lambda: len(twilio.created) >= expected, timeout=40)
            await asyncio.sleep(0.5)  # a second answer to any turn would show by now
            replies = await _count(
                gateway,
                select(func.count()).select_from(Message).where(Message.role == "assistant"),
            )
            answered = await _count(
                gateway, select(func.count()).select_from(TurnRow).where(TurnRow.status == "done")
            )
    assert len(twilio.created) == expected
    assert len(model.calls) == expected
    assert (replies, answered) == (expected, expected)
    for sender in senders:
        assert _replies_to(twilio, sender) == [f"re: pedido {i}" for i in range(per_sender)]
