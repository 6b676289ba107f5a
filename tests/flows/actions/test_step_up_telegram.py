"""Step-up through Telegram: a number a Telegram user shared as their own contact is verified
by that account, so a web chat visitor claiming it gets the code in that Telegram chat."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from channels.telegram import SECRET_HEADER
from tests.flows.actions.step_up_support import (
    OrderApi,
    Visitor,
    everything_stored,
    model_answer,
    model_calls,
)
from tests.flows.actions.support import IDENTITY_KEY, save_settings, serving
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.stack import running_stack
from tests.support.telegram_server import FakeBotApi

pytestmark = pytest.mark.usefixtures("timedelta_periods")

TOKEN = "123456:TEST-token_abcdefghijklmnop"
SECRET = "webhook-secret_for-tests"
USER = 412_345_678
PHONE = "+5511998765432"


def _update(update_id: int, **content: Any) -> dict[str, Any]:
    return {
        "update_id": update_id,
        "message": {
            "message_id": update_id,
            "date": 1764400000,
            "from": {"id": USER, "is_bot": False, "first_name": "Ana"},
            "chat": {"id": USER, "type": "private", "first_name": "Ana"},
            **content,
        },
    }


async def test_the_code_goes_to_the_telegram_chat_that_shared_the_number(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    telegram, base = bot_api
    api = OrderApi()
    model = FakeOpenAI(tool_calls_for=model_calls, reply_for=model_answer)
    async with (
        serving(api.app()) as url,
        model.serving() as model_url,
        running_stack(
            "embedded",
            tmp_path,
            TELEGRAM_BOT_TOKEN=TOKEN,
            TELEGRAM_WEBHOOK_SECRET=SECRET,
            TELEGRAM_API_BASE=base,
            RELAYDESK_TOOL_IDENTITY_KEY=IDENTITY_KEY,
            RELAYDESK_FETCH_ALLOW="127.0.0.1",
            **model_settings(model_url),
        ) as stack,
    ):
        order = {
            "name": "order_status",
            "description": "Where an order is",
            "parameters": {"type": "object", "properties": {"order": {"type": "string"}}},
            "min_link_level": "verified",
            "endpoint": {"url": f"{url}/orders"},
        }
        await save_settings(stack, {"tools": [order]})
        contact = {"phone_number": PHONE.lstrip("+"), "first_name": "Ana", "user_id": USER}
        for update in (_update(1, text="oi"), _update(2, contact=contact)):
            response = await stack.client.post(
                "/webhooks/telegram", json=update, headers={SECRET_HEADER: SECRET}
            )
            assert response.status == 200
        await stack.idle()
        before = len(telegram.sent())

        visitor = Visitor(stack)
        await visitor.say(f"meu número é {PHONE}")

        [sent] = telegram.sent()[before:]
        assert str(sent["chat_id"]) == str(USER)
        code = re.search(r"\b(\d{6})\b", sent["text"])
        assert code is not None

        done = await visitor.say(code.group(1))

        assert done == 'resultado: {"order": "4471", "status": "a caminho"}'
        assert (await visitor.identity()).evidence["step_up"] == "otp:telegram"
        assert code.group(1) not in await everything_stored(stack)
