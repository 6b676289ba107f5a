"""A customer's model calls are paced, on both backends: a burst of 100 signed WhatsApp webhooks
from one customer is acknowledged in full (a provider's webhook is never refused), costs the
model at most the tenant's `model_calls_per_customer` per window, and every message is
answered: the turns past the limit are batched into the reply to a later message, whose window
holds them."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.storage.models import Message, TurnRow
from gateway.storage.repositories import tenants
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.whatsapp_stack import WhatsAppStack, until, whatsapp_stack

# Serial: the calls are counted per window of time.
pytestmark = pytest.mark.serial

CALLS, PERIOD_S = 3, 2  # the limit under test: "3 per 2 seconds"
PACED = {"rate_limits": {"model_calls_per_customer": f"{CALLS} per {PERIOD_S} seconds"}}
MESSAGES = 100
NUMBER = "+5511987654321"


@pytest.fixture(params=["embedded", "production"])
async def paced(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[WhatsAppStack, FakeOpenAI]]:
    model = FakeOpenAI(delay_s=0.05)
    async with model.serving() as url:
        async with whatsapp_stack(tmp_path, request.param, **model_settings(url)) as whatsapp:
            async with whatsapp.stack.sessions().begin() as session:
                await tenants.save_tenant_settings(session, domain="default", settings=PACED)
            yield whatsapp, model


async def _turns(whatsapp: WhatsAppStack) -> list[tuple[str, str]]:
    """(message text, turn status) of the customer's messages, in arrival order."""
    async with whatsapp.stack.sessions()() as session:
        rows = await session.execute(
            select(Message.text, TurnRow.status)
            .join(TurnRow, TurnRow.inbound_message_id == Message.id)
            .order_by(Message.id)
        )
        return [(text, status) for text, status in rows]


async def test_a_burst_costs_at_most_the_limits_calls_and_every_message_is_answered(
    paced: tuple[WhatsAppStack, FakeOpenAI],
) -> None:
    whatsapp, model = paced
    texts = [f"pedido {index}: ainda não chegou" for index in range(MESSAGES)]
    started = time.monotonic()
    for text in texts:
        await whatsapp.post(NUMBER, text)  # each acknowledged 200

    async def settled() -> bool:
        turns = await _turns(whatsapp)
        return len(turns) == MESSAGES and all(status != "pending" for _, status in turns)

    await until(settled, timeout=90)
    elapsed = time.monotonic() - started
    turns = await _turns(whatsapp)
    assert [text for text, _ in turns] == texts
    answered = [text for text, status in turns if status == "done"]
    batched = [text for text, status in turns if status == "batched"]
    assert len(answered) + len(batched) == MESSAGES
    assert turns[-1][1] == "done"  # the last message is answered: nothing is left behind

    # One model call per answered turn, far fewer than the messages, never more than the
    # limit within a window (call starts seen by the model lag the counted hits a little).
    calls = sorted(model.calls, key=lambda call: call.started)
    assert len(calls) == len(answered)
    assert len(calls) <= CALLS * (math.ceil(elapsed / PERIOD_S) + 1), (len(calls), elapsed)
    assert len(calls) < MESSAGES / 4
    for earlier, later in zip(calls, calls[CALLS:], strict=False):
        assert later.started - earlier.started > PERIOD_S / 2

    # The reply to a batch saw every message of it: the batched message just before an
    # answered one is in that call's window.
    for index, (text, status) in enumerate(turns):
        if status == "done" and index > 0 and turns[index - 1][1] == "batched":
            call = next(call for call in calls if call.last_user_text.endswith(text))
            window = " ".join(message["content"] for message in call.messages)
            assert turns[index - 1][0] in window
    await until(lambda: len(whatsapp.twilio.created) == len(answered), timeout=30)
