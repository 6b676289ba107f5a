"""The satisfaction question with buttons where the channel shows them: Telegram's inline
keyboard (its tap a `callback_query`) and the Cloud API's interactive list (its tap a
`list_reply`), through signed webhooks and the local Bot API and Graph servers."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from gateway.storage.models_csat import CsatSurvey
from gateway.tenants import TenantSettings
from tests.flows.webhooks.test_telegram_webhook import Updates, post, telegram_settings
from tests.support.app_settings import AUTH
from tests.support.cloud_stack import WA_ID, cloud_stack, cloud_text, post_cloud
from tests.support.stack import Stack, running_stack
from tests.support.telegram_server import FakeBotApi
from tests.support.whatsapp_stack import until

pytestmark = pytest.mark.usefixtures("timedelta_periods")
BASE = "/v1/operator/conversations"
DEFAULTS = TenantSettings()


async def _send(stack: Stack, method: str, path: str, **body: Any) -> Any:
    response = await stack.client.request(method, path, json=body, headers=AUTH)
    assert response.status < 300, await response.text()
    return await response.json()


async def _switch_on_hold_and_hand_back(stack: Stack) -> None:
    await _send(
        stack,
        "PATCH",
        "/v1/settings/domain/default",
        settings={"csat_enabled": True},
        reason="ask customers",
    )
    [conversation] = (await _send(stack, "GET", BASE))["conversations"]
    path = f"{BASE}/{conversation['id']}"
    await _send(stack, "POST", f"{path}/take", actor="alice", reason="a delayed order")
    await _send(stack, "POST", f"{path}/handback", actor="alice", reason="solved")


async def _answered(stack: Stack) -> tuple[int | None, bool]:
    async with stack.sessions()() as session:
        [survey] = list(await session.scalars(select(CsatSurvey)))
    return survey.score, survey.person_took_part


async def _counted(stack: Stack) -> list[tuple[str, str, str]]:
    text = await (await stack.client.get("/metrics")).text()
    return re.findall(
        r'^relaydesk_csat_answers_total\{person="(\w+)",score="(\d)"\} (\S+)$', text, re.M
    )


async def test_telegram_asks_with_an_inline_keyboard_and_takes_the_tap(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    updates = Updates()
    async with running_stack("embedded", tmp_path, **telegram_settings(base)) as stack:
        assert (await post(stack, updates.text("Onde está meu pedido?"))).status == 200
        await stack.idle()
        await _switch_on_hold_and_hand_back(stack)
        await until(lambda: len(api.sent()) == 2)
        asked = api.sent()[-1]
        assert asked["text"] == DEFAULTS.csat_question
        keyboard = json.loads(asked["reply_markup"])["inline_keyboard"]
        assert [(b["text"], b["callback_data"]) for b in keyboard[0]] == [
            (str(score), f"csat:{score}") for score in range(1, 6)
        ]
        press = {
            "update_id": updates._id(),
            "callback_query": {
                "id": "cq1",
                "chat_instance": "ci",
                "data": "csat:2",
                "from": {"id": updates.user_id, "is_bot": False, "first_name": "Ana"},
                "message": {
                    "message_id": 2,
                    "date": 1764400001,
                    "chat": {"id": updates.user_id, "type": "private"},
                    "text": DEFAULTS.csat_question,
                },
            },
        }
        assert (await post(stack, press)).status == 200
        await stack.idle()
        assert api.sent()[-1]["text"] == DEFAULTS.csat_thanks
        assert await _answered(stack) == (2, True)
        assert await _counted(stack) == [("yes", "2", "1.0")]


async def test_the_cloud_api_asks_with_an_interactive_list_and_takes_the_row(
    tmp_path: Path,
) -> None:
    async with cloud_stack(tmp_path) as (stack, graph):
        assert await post_cloud(stack, cloud_text("Olá, meu pedido atrasou")) == 200
        await stack.idle()
        await _switch_on_hold_and_hand_back(stack)
        await until(lambda: len(graph.sent()) == 2)
        asked = graph.sent()[-1]
        assert asked["type"] == "interactive"
        interactive = asked["interactive"]
        assert interactive["type"] == "list"
        assert interactive["body"] == {"text": DEFAULTS.csat_question}
        [section] = interactive["action"]["sections"]
        assert [(row["id"], row["title"]) for row in section["rows"]] == [
            (f"csat:{score}", str(score)) for score in range(1, 6)
        ]
        assert len(interactive["action"]["button"]) <= 20

        tap = cloud_text("")
        [item] = tap["entry"][0]["changes"][0]["value"]["messages"]
        item.pop("text")
        item.update(
            {
                "id": f"wamid.{uuid.uuid4().hex}",
                "from": WA_ID,
                "type": "interactive",
                "interactive": {
                    "type": "list_reply",
                    # A title that is no digit: the row's id (the payload) answers.
                    "list_reply": {"id": "csat:4", "title": "Good"},
                },
            }
        )
        assert await post_cloud(stack, tap) == 200
        await stack.idle()
        assert graph.sent()[-1]["text"] == {"body": DEFAULTS.csat_thanks}
        assert await _answered(stack) == (4, True)
        assert await _counted(stack) == [("yes", "4", "1.0")]
