"""`POST /webhooks/telegram` end to end over real sockets: the secret token, bodies that are
refused, dedupe on `update_id` under concurrent replays, edits kept as history, contact shares
linking identities, and replies through python-telegram-bot to a local Bot API server."""

from __future__ import annotations

import asyncio
import logging
import random
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestServer
from sqlalchemy import func, select
from twilio.request_validator import RequestValidator

from channels.telegram import MAX_TEXT_UNITS, SECRET_HEADER
from gateway.keys import MEMORY
from gateway.memory.queue import CompactionJob
from gateway.storage.models import Message, TurnRow
from tests.support.stack import API_KEY, Stack, inbound_rows, running_stack
from tests.support.telegram_server import FakeBotApi

BACKENDS = ["embedded", "production"]
TOKEN = "123456:TEST-token_abcdefghijklmnop"
SECRET = "webhook-secret_for-tests"
TWILIO_TOKEN = "twilio-auth-token-for-tests"
PHONE = "+5511998765432"
AUTH = {"Authorization": f"Bearer {API_KEY}"}

pytestmark = pytest.mark.usefixtures("timedelta_periods")


def telegram_settings(base: str, **more: object) -> dict[str, object]:
    return {
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "TELEGRAM_WEBHOOK_SECRET": SECRET,
        "TELEGRAM_API_BASE": base,
        **more,
    }


class Updates:
    """Current-schema updates from one private-chat user, with fresh update ids."""

    def __init__(self, user_id: int | None = None) -> None:
        self.user_id = user_id or random.randrange(10**8, 10**9)
        self._next = random.randrange(10**8, 10**9)

    def _id(self) -> int:
        self._next += 1
        return self._next

    def message(self, message_id: int = 1, *, edited: bool = False, **content: Any) -> dict:  # type: ignore[type-arg]
        body = {
            "message_id": message_id,
            "date": 1764400000,
            "from": {"id": self.user_id, "is_bot": False, "first_name": "Ana", "last_name": "S"},
            "chat": {"id": self.user_id, "type": "private", "first_name": "Ana"},
            **content,
        }
        if edited:
            body["edit_date"] = 1764400100
        return {"update_id": self._id(), "edited_message" if edited else "message": body}

    def text(self, text: str, message_id: int = 1) -> dict:  # type: ignore[type-arg]
        return self.message(message_id, text=text)


async def post(stack: Stack, body: dict | bytes, secret: str | None = SECRET) -> ClientResponse:  # type: ignore[type-arg]
    headers = {SECRET_HEADER: secret} if secret is not None else {}
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        return await stack.client.post("/webhooks/telegram", data=body, headers=headers)
    return await stack.client.post("/webhooks/telegram", json=body, headers=headers)


async def count(stack: Stack, model: Any, *where: Any) -> int:
    async with stack.sessions()() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)))


async def user_rows(stack: Stack) -> list[Message]:
    async with stack.sessions()() as session:
        query = select(Message).where(Message.role == "user").order_by(Message.id)
        return list(await session.scalars(query))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_message_is_stored_and_answered_in_its_chat(
    backend: str, tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    updates = Updates()
    async with running_stack(backend, tmp_path, **telegram_settings(base)) as stack:
        response = await post(stack, updates.text("Onde está meu pedido 4471?"))
        assert response.status == 200 and await response.json() == {"ok": True}
        await stack.idle()
        (row,) = await user_rows(stack)
        assert (row.channel, row.text, row.thread_key) == (
            "telegram",
            "Onde está meu pedido 4471?",
            f"telegram:{updates.user_id}",
        )
        assert row.extra is not None and row.extra["kind"] == "text"
        assert row.extra["link_level"] == "verified"
        (sent,) = api.sent()
        assert sent["chat_id"] == str(updates.user_id)
        assert "Onde está meu pedido 4471?" in sent["text"]  # the offline reply quotes it
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "sent"
        # A button press on the bot's message is a message too.
        press = {
            "update_id": updates._id(),
            "callback_query": {
                "id": "cq1",
                "chat_instance": "ci",
                "data": "pedido:4471",
                "from": {"id": updates.user_id, "is_bot": False, "first_name": "Ana"},
                "message": {
                    "message_id": 2,
                    "date": 1764400001,
                    "chat": {"id": updates.user_id, "type": "private"},
                    "text": "Qual pedido?",
                },
            },
        }
        answered = await post(stack, press)
        # The tap is answered in the 200 itself, so the button stops spinning at once.
        assert answered.status == 200
        assert await answered.json() == {
            "method": "answerCallbackQuery",
            "callback_query_id": "cq1",
        }
        await stack.idle()
        assert [r.extra["kind"] for r in await user_rows(stack) if r.extra] == ["text", "button"]
        assert len(api.sent()) == 2


LONG_REPLY = "\n\n".join(
    f"Parágrafo {i}: " + " ".join(f"palavra{j}" for j in range(300)) for i in range(3)
)


async def _long_completion(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response(
        {
            "id": "chatcmpl-long",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": LONG_REPLY},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 3000, "total_tokens": 3100},
        }
    )


async def test_a_long_reply_arrives_split_in_order(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    model = web.Application()  # a model that answers at length
    model.router.add_post("/v1/chat/completions", _long_completion)
    model_server = TestServer(model)
    await model_server.start_server()
    updates = Updates()
    assert len(LONG_REPLY) > 2 * MAX_TEXT_UNITS
    settings = telegram_settings(
        base,
        RELAYDESK_MODEL="openai:test-model",
        RELAYDESK_MODEL_BASE_URL=str(model_server.make_url("/v1")),
    )
    try:
        async with running_stack("embedded", tmp_path, **settings) as stack:
            assert (await post(stack, updates.text("conte tudo"))).status == 200
            await stack.idle()
    finally:
        await model_server.close()
    sent = api.sent()
    assert len(sent) == 3
    assert {part["chat_id"] for part in sent} == {str(updates.user_id)}
    assert all(len(part["text"].encode("utf-16-le")) // 2 <= MAX_TEXT_UNITS for part in sent)
    squeeze = re.compile(r"\s+")
    received = squeeze.sub("", "".join(part["text"] for part in sent))
    assert received == squeeze.sub("", LONG_REPLY)
    # Cut at the paragraph breaks, in order.
    assert [part["text"].split(":")[0] for part in sent] == [
        "Parágrafo 0",
        "Parágrafo 1",
        "Parágrafo 2",
    ]


@pytest.mark.parametrize(
    ("secret", "configured"),
    [("wrong-secret", SECRET), (None, SECRET), ("", SECRET), (SECRET, None)],
    ids=["wrong", "missing", "empty", "not-configured"],
)
async def test_a_bad_secret_is_a_403_and_stores_nothing(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str], secret: str | None, configured: str | None
) -> None:
    api, base = bot_api
    settings = telegram_settings(base)
    if configured is None:
        del settings["TELEGRAM_WEBHOOK_SECRET"]
    async with running_stack("embedded", tmp_path, **settings) as stack:
        response = await post(stack, Updates().text("oi"), secret)
        assert response.status == 403
        assert (await response.json())["error"] == "invalid_signature"
        assert await inbound_rows(stack) == 0
        await stack.idle()
        assert await count(stack, Message) == 0
        assert await count(stack, TurnRow) == 0
    assert api.calls == []


async def test_malformed_and_oversized_bodies_are_refused_and_store_nothing(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    _, base = bot_api
    settings = telegram_settings(base, RELAYDESK_MAX_BODY_BYTES=1024)
    async with running_stack("embedded", tmp_path, **settings) as stack:
        for body in (b"{not json", b"[1, 2]", b'{"message": {"text": "no update_id"}}'):
            response = await post(stack, body)
            assert response.status == 400, body
            assert (await response.json())["error"] == "invalid_payload"
        big = await post(stack, Updates().text("x" * 2000))
        assert big.status == 413
        assert (await big.json())["error"] == "payload_too_large"
        assert await inbound_rows(stack) == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_one_update_replayed_20_times_concurrently_is_one_row_and_one_reply(
    backend: str, tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    update = Updates().text("mesma mensagem")
    async with running_stack(backend, tmp_path, **telegram_settings(base)) as stack:
        responses = await asyncio.gather(*(post(stack, update) for _ in range(20)))
        assert [r.status for r in responses] == [200] * 20
        await stack.idle()
        assert await count(stack, Message, Message.role == "user") == 1
        assert await count(stack, Message, Message.role == "assistant") == 1
        assert await count(stack, TurnRow) == 1
    assert len(api.sent()) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_edit_is_a_new_row_superseding_the_last_version_and_is_not_answered(
    backend: str, tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    updates = Updates()
    async with running_stack(backend, tmp_path, **telegram_settings(base)) as stack:
        await post(stack, updates.text("pedido 4417", message_id=7))
        await post(stack, updates.text("outra coisa", message_id=8))
        await stack.idle()
        first_edit = updates.message(7, edited=True, text="pedido 4471")
        second_edit = updates.message(7, edited=True, text="pedido 4471, urgente")
        for edit in (first_edit, second_edit, first_edit):  # a redelivered edit is one row
            assert (await post(stack, edit)).status == 200
        await stack.idle()
        rows = await user_rows(stack)
        assert [(r.text, r.extra["kind"] if r.extra else None) for r in rows] == [
            ("pedido 4417", "text"),
            ("outra coisa", "text"),
            ("pedido 4471", "edit"),
            ("pedido 4471, urgente", "edit"),
        ]
        assert [r.supersedes_id for r in rows] == [None, None, rows[0].id, rows[2].id]
        assert await count(stack, TurnRow) == 2  # the two originals only
    assert len(api.sent()) == 2


async def _whatsapp_message(stack: Stack, text: str) -> None:
    url = str(stack.client.make_url("/webhooks/twilio/whatsapp"))
    params = {
        "MessageSid": f"SM{random.getrandbits(128):032x}",
        "AccountSid": "AC" + "0" * 32,
        "From": f"whatsapp:{PHONE}",
        "To": "whatsapp:+14155238886",
        "Body": text,
        "NumMedia": "0",
    }
    signature = RequestValidator(TWILIO_TOKEN).compute_signature(url, params)
    response = await stack.client.post(
        "/webhooks/twilio/whatsapp",
        data=urlencode(params),
        headers={
            "X-Twilio-Signature": signature,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )
    assert response.status == 200
    # Stored before the next webhook arrives: only one sender's messages keep their order.
    await stack.stored()


async def _profile_of_telegram_user(stack: Stack, user_id: int) -> dict:  # type: ignore[type-arg]
    async with stack.sessions()() as session:
        customer_id = await session.scalar(
            select(Message.customer_id).where(Message.thread_key == f"telegram:{user_id}")
        )
    response = await stack.client.get(f"/v1/operator/customers/{customer_id}", headers=AUTH)
    assert response.status == 200
    profile: dict = await response.json()  # type: ignore[type-arg]
    return profile


@pytest.mark.parametrize("backend", BACKENDS)
async def test_sharing_ones_own_contact_joins_the_whatsapp_customer_with_that_number(
    backend: str, tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    _, base = bot_api
    updates = Updates()
    settings = telegram_settings(base, TWILIO_AUTH_TOKEN=TWILIO_TOKEN)
    async with running_stack(backend, tmp_path, **settings) as stack:
        await _whatsapp_message(stack, "Oi, é a Ana")
        own = updates.message(
            contact={
                "phone_number": PHONE.lstrip("+"),  # Telegram sends it without the "+"
                "first_name": "Ana",
                "user_id": updates.user_id,
            }
        )
        assert (await post(stack, own)).status == 200
        await stack.idle()
        profile = await _profile_of_telegram_user(stack, updates.user_id)
        identities = {i["external_id"]: i["link_level"] for i in profile["identities"]}
        assert identities == {
            f"whatsapp:{PHONE}": "verified",
            f"telegram:{updates.user_id}": "verified",
        }
        assert {"kind": "phone", "value": PHONE, "link_level": "verified"} in profile["identifiers"]

        # The WhatsApp conversation reaches a Telegram window only as its tagged summary.
        window = await _telegram_window(stack, updates.user_id, "ainda sobre aquilo")
        assert "Oi, é a Ana" not in "\n".join(m["content"] for m in window["messages"][1:])
        async with stack.sessions()() as session:
            whatsapp_episode = await session.scalar(
                select(Message.episode_id).where(Message.channel == "whatsapp")
            )
        assert whatsapp_episode is not None
        await stack.app[MEMORY].handle(CompactionJob(profile["id"], whatsapp_episode, "closed"))
        window = await _telegram_window(stack, updates.user_id, "ainda sobre aquilo")
        system = window["messages"][0]["content"]
        assert "[whatsapp · typed · " in system and "Oi, é a Ana" in system
        assert "Oi, é a Ana" not in "\n".join(m["content"] for m in window["messages"][1:])


async def _telegram_window(stack: Stack, user_id: int, text: str) -> dict:  # type: ignore[type-arg]
    response = await stack.client.post(
        "/v1/context",
        json={"channel": "telegram", "external_id": str(user_id), "message": text},
        headers={"Authorization": f"Bearer {API_KEY}"},
    )
    assert response.status == 200
    result: dict = await response.json()  # type: ignore[type-arg]
    return result


async def test_a_contact_of_someone_else_links_nothing(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    _, base = bot_api
    updates = Updates()
    settings = telegram_settings(base, TWILIO_AUTH_TOKEN=TWILIO_TOKEN)
    async with running_stack("embedded", tmp_path, **settings) as stack:
        await _whatsapp_message(stack, "Oi, é a Ana")
        other = updates.message(
            contact={"phone_number": PHONE.lstrip("+"), "first_name": "Ana", "user_id": 999}
        )
        assert (await post(stack, other)).status == 200
        await stack.idle()
        profile = await _profile_of_telegram_user(stack, updates.user_id)
        assert [i["external_id"] for i in profile["identities"]] == [f"telegram:{updates.user_id}"]
        assert all(i["kind"] != "phone" for i in profile["identifiers"])


async def test_flood_control_from_telegram_is_waited_out(
    tmp_path: Path, bot_api: tuple[FakeBotApi, str]
) -> None:
    api, base = bot_api
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    updates = Updates()
    async with running_stack("embedded", tmp_path, **telegram_settings(base)) as stack:
        await post(stack, updates.text("oi"))
        await stack.idle()
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.delivery_status == "sent"
    first, second = api.sent()
    assert first == second and first["chat_id"] == str(updates.user_id)


@pytest.mark.parametrize(
    ("update", "update_type"),
    [
        (
            {
                "update_id": 5,
                "channel_post": {
                    "message_id": 1,
                    "date": 0,
                    "chat": {"id": -100123, "type": "channel", "title": "News"},
                    "text": "segredo do canal",
                },
            },
            "channel_post",
        ),
        ({"update_id": 6, "brand_new_kind": {"text": "segredo novo"}}, "brand_new_kind"),
        (
            {
                "update_id": 7,
                "message": {
                    "message_id": 1,
                    "date": 0,
                    "from": {"id": 31, "is_bot": False, "first_name": "G"},
                    "chat": {"id": -31, "type": "group", "title": "Grupo"},
                    "text": "segredo do grupo",
                },
            },
            "message",
        ),
    ],
    ids=["channel-post", "unknown-kind", "group-message"],
)
async def test_updates_without_a_customer_message_are_acknowledged_and_logged_by_kind(
    tmp_path: Path,
    bot_api: tuple[FakeBotApi, str],
    caplog: pytest.LogCaptureFixture,
    update: dict,  # type: ignore[type-arg]
    update_type: str,
) -> None:
    api, base = bot_api
    caplog.set_level(logging.INFO, logger="relaydesk.webhooks")
    async with running_stack("embedded", tmp_path, **telegram_settings(base)) as stack:
        response = await post(stack, update)
        assert response.status == 200 and await response.json() == {"ok": True}
        assert await inbound_rows(stack) == 0
        await stack.idle()
        assert await count(stack, Message) == 0
    assert api.calls == []
    (record,) = [r for r in caplog.records if r.getMessage() == "telegram update ignored"]
    assert record.levelno == logging.INFO
    assert record.fields["update_type"] == update_type  # type: ignore[attr-defined]
    assert "segredo" not in caplog.text
