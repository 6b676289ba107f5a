"""An operator's message on the other channels and when its send fails: to a Telegram chat
through python-telegram-bot and the local Bot API; a WhatsApp send Twilio refuses shows on the
message with its error and is sent again by the delivery retries, like a bot reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.keys import DELIVER
from tests.flows.webhooks.test_telegram_webhook import Updates, post, telegram_settings
from tests.support.app_settings import AUTH
from tests.support.stack import Stack, running_stack
from tests.support.telegram_server import FakeBotApi
from tests.support.whatsapp_stack import until, whatsapp_stack

NUMBER = "+5511998765432"
BASE = "/v1/operator/conversations"

pytestmark = pytest.mark.usefixtures("timedelta_periods")


async def _json(stack: Stack, method: str, path: str, **body: Any) -> tuple[int, Any]:
    if method == "GET":
        response = await stack.client.get(path, headers=AUTH)
    else:
        response = await stack.client.post(path, json=body, headers=AUTH)
    return response.status, await response.json()


async def _take(stack: Stack, channel: str, external_id: str) -> str:
    status, held = await _json(
        stack,
        "POST",
        f"{BASE}/handoff",
        channel=channel,
        external_id=external_id,
        reason="a complaint",
        actor="alice",
    )
    assert status == 200 and held["owner"] == "human", held
    return str(held["id"])


async def _delivery_of(stack: Stack, conversation_id: str, message_id: int) -> Any:
    status, detail = await _json(stack, "GET", f"{BASE}/{conversation_id}")
    assert status == 200
    (found,) = [m for m in detail["messages"] if m["id"] == message_id]
    assert (found["author"], found["actor"]) == ("operator", "alice")
    return found["delivery"]


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_an_operator_writes_to_a_telegram_chat(
    tmp_path: Path, backend: str, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    updates = Updates()
    async with running_stack(backend, tmp_path, **telegram_settings(base)) as stack:
        assert (await post(stack, updates.text("Oi, preciso de ajuda"))).status == 200
        await stack.idle()
        await until(lambda: len(api.sent()) == 1)  # the bot's reply
        conversation_id = await _take(stack, "telegram", str(updates.user_id))

        status, written = await _json(
            stack,
            "POST",
            f"{BASE}/{conversation_id}/messages",
            text="Oi, sou a Alice.",
            actor="alice",
        )
        assert status == 202, written
        await until(lambda: len(api.sent()) == 2)
        sent = api.sent()[-1]
        assert sent["text"] == "Oi, sou a Alice."
        assert sent["chat_id"] == str(updates.user_id)
        await until(lambda: len(api.sent()) == 2)
        delivery = await _delivery_of(stack, conversation_id, written["message_id"])
        assert delivery["status"] in ("sent", "delivered")


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_refused_operator_send_shows_its_error_and_is_sent_again(
    tmp_path: Path, backend: str
) -> None:
    async with whatsapp_stack(tmp_path, backend) as gateway:
        stack, twilio = gateway.stack, gateway.twilio
        await gateway.say(NUMBER, "Olá")
        conversation_id = await _take(stack, "whatsapp", NUMBER)
        sent = len(twilio.created)

        # Twilio is down for the whole of one delivery attempt (the adapter tries 4 times).
        twilio.fail_next = [503] * 4
        status, written = await _json(
            stack, "POST", f"{BASE}/{conversation_id}/messages", text="Já verifico.", actor="alice"
        )
        assert status == 202, written
        message_id = written["message_id"]

        async def refused() -> bool:
            delivery = await _delivery_of(stack, conversation_id, message_id)
            return delivery is not None and delivery["status"] == "retry"

        await until(refused)
        delivery = await _delivery_of(stack, conversation_id, message_id)
        assert delivery["error"]  # the operator sees why
        assert len(twilio.created) == sent  # the refused attempt delivered nothing

        # The delivery retries send it like any reply, once.
        assert await stack.app[DELIVER].retry_deliveries() >= 1
        await until(lambda: len(twilio.created) == sent + 1)
        assert twilio.created[-1]["Body"] == "Já verifico."
        assert twilio.created[-1]["To"] == f"whatsapp:{NUMBER}"
        delivery = await _delivery_of(stack, conversation_id, message_id)
        assert delivery["status"] in ("sent", "delivered") and delivery["error"] is None
