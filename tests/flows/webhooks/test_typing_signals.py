"""Typing signals while the model works, through the real SDKs to local provider APIs: Twilio's
typing indicator for the WhatsApp message being answered, Telegram's `sendChatAction` repeated
until the reply goes and never after it; a refused signal is not retried and never holds the
reply back."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer

from channels.telegram import SECRET_HEADER
from gateway.keys import ADAPTERS
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import Stack, running_stack
from tests.support.telegram_server import FakeBotApi
from tests.support.twilio_server import FakeTwilio

TWILIO_TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "f" * 32
PUBLIC_URL = "https://relay.example.org"
BOT_TOKEN = "123456:TEST-token_abcdefghijklmnop"
SECRET = "webhook-secret_for-tests"


@asynccontextmanager
async def _served(*apps: Any) -> AsyncIterator[list[str]]:
    servers = [TestServer(app) for app in apps]
    for server in servers:
        await server.start_server()
    try:
        yield [str(server.make_url("")).rstrip("/") for server in servers]
    finally:
        for server in servers:
            await server.close()


@asynccontextmanager
async def _stack(tmp_path: Path, model: FakeOpenAI, **channel: object) -> AsyncIterator[Stack]:
    async with (
        model.serving() as model_url,
        running_stack(
            "embedded",
            tmp_path,
            **model_settings(model_url),
            RELAYDESK_PUBLIC_URL=PUBLIC_URL,
            **channel,
        ) as stack,
    ):
        yield stack


async def _until(condition: Any, timeout: float = 15.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.02)


def _whatsapp(base: str) -> dict[str, object]:
    return {
        "TWILIO_ACCOUNT_SID": ACCOUNT,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": base,
    }


async def _whatsapp_message(stack: Stack) -> str:
    sid = f"SM{uuid.uuid4().hex}"
    params = inbound_params(sid, "whatsapp:+5511998765432", "Meu pedido?", account=ACCOUNT)
    response = await post_signed(stack.client, params, token=TWILIO_TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200
    return sid


async def test_whatsapp_shows_twilios_typing_indicator_before_the_reply(tmp_path: Path) -> None:
    twilio = FakeTwilio()
    typing_when_sent: list[int] = []
    twilio.on_created = lambda _at, _form: typing_when_sent.append(len(twilio.typing))
    async with _served(twilio.app()) as [base]:
        async with _stack(tmp_path, FakeOpenAI(delay_s=0.8), **_whatsapp(base)) as stack:
            sid = await _whatsapp_message(stack)
            await _until(lambda: len(twilio.created) == 1)
    assert twilio.typing == [{"channel": "whatsapp", "messageId": sid}]
    assert typing_when_sent == [1]  # the indicator went while the model worked


async def test_a_refused_typing_signal_is_not_retried_and_the_reply_still_goes(
    tmp_path: Path,
) -> None:
    twilio = FakeTwilio(fail_typing_next=[500])
    async with _served(twilio.app()) as [base]:
        async with _stack(tmp_path, FakeOpenAI(delay_s=1.0), **_whatsapp(base)) as stack:
            # Renewed often here, so a retry or a renewal after the failure would show.
            stack.client.app[ADAPTERS]["whatsapp"].typing_repeat_s = 0.1  # type: ignore[attr-defined]
            await _whatsapp_message(stack)
            await _until(lambda: len(twilio.created) == 1)
    assert len(twilio.typing) == 1
    assert twilio.created[0]["Body"] == "re: Meu pedido?"


async def test_telegram_repeats_the_chat_action_until_the_reply_and_never_after(
    tmp_path: Path,
) -> None:
    api = FakeBotApi()
    async with _served(api.app()) as [base]:
        settings = {
            "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "TELEGRAM_API_BASE": base,
        }
        async with _stack(tmp_path, FakeOpenAI(delay_s=1.2), **settings) as stack:
            stack.client.app[ADAPTERS]["telegram"].typing_repeat_s = 0.25  # type: ignore[attr-defined]
            user = 777000111
            update = {
                "update_id": 5001,
                "message": {
                    "message_id": 1,
                    "date": 1764400000,
                    "from": {"id": user, "is_bot": False, "first_name": "Ana"},
                    "chat": {"id": user, "type": "private", "first_name": "Ana"},
                    "text": "Cadê meu pedido?",
                },
            }
            response = await stack.client.post(
                "/webhooks/telegram", json=update, headers={SECRET_HEADER: SECRET}
            )
            assert response.status == 200
            await _until(lambda: len(api.sent()) == 1)
            await asyncio.sleep(0.6)  # two renewals' worth: none may come now
    methods = [call.method for call in api.calls if call.method != "getMe"]
    reply_at = methods.index("sendMessage")
    actions = api.sent("sendChatAction")
    assert len(actions) >= 3, methods  # at once, then every 0.25 s while the model works
    assert all(a == {"chat_id": str(user), "action": "typing"} for a in actions)
    assert "sendChatAction" not in methods[reply_at:]
