"""The Telegram adapter's own part: the secret token, and sends and typing actions through
python-telegram-bot to a local server speaking the Bot API (long replies in ordered parts)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from telegram.warnings import PTBDeprecationWarning

from channels.base import (
    Media,
    OutboundMessage,
    RawRequest,
    SendFailed,
    SignatureInvalid,
    TypingSignals,
)
from channels.splitting import utf16_units
from channels.telegram import MAX_TEXT_UNITS, SECRET_HEADER, TelegramChannel
from tests.support.telegram_server import FakeBotApi

NOW = datetime(2026, 11, 29, tzinfo=UTC)
SECRET = "s3cret_token-for-tests"
TOKEN = "123456:TEST-token_abcdefghijklmnop"

pytestmark = pytest.mark.usefixtures("timedelta_periods")


def channel(secret: str | None = SECRET, **options: Any) -> TelegramChannel:
    values: dict[str, Any] = {"token": TOKEN, "api_base": None, "base_delay_s": 0.01}
    values.update(options)
    return TelegramChannel(webhook_secret=secret, clock=lambda: NOW, **values)


def request(body: dict[str, Any], secret: str | None = SECRET) -> RawRequest:
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    raw = json.dumps(body).encode()
    return RawRequest("POST", "https://relay.example.org/webhooks/telegram", headers, raw)


# The secret token.


def test_the_right_secret_passes() -> None:
    channel().verify(request({"update_id": 1}))


@pytest.mark.parametrize(
    ("given", "configured"),
    [
        ("wrong-secret", SECRET),
        (SECRET + "x", SECRET),
        ("", SECRET),
        (None, SECRET),
        (SECRET, None),  # no secret configured: every call is refused
        (SECRET, ""),
        ("sécret", SECRET),  # non-ASCII compares as bytes, no TypeError
    ],
)
def test_a_missing_or_wrong_secret_is_a_403(given: str | None, configured: str | None) -> None:
    with pytest.raises(SignatureInvalid) as refused:
        channel(configured).verify(request({"update_id": 1}, given))
    assert refused.value.status == 403


def test_the_secret_header_name_is_case_insensitive() -> None:
    raw = RawRequest("POST", "/", {SECRET_HEADER.lower(): SECRET}, b"{}")
    channel().verify(raw)


# Sends through python-telegram-bot to a local Bot API.


async def _send(sender: TelegramChannel, text: str, recipient: str = "555001") -> list[str]:
    try:
        result = await sender.send(OutboundMessage("telegram", recipient, text))
    finally:
        await sender.close()
    return list(result.provider_message_ids)


async def test_a_send_goes_to_the_chat_in_order(bot_api: tuple[FakeBotApi, str]) -> None:
    api, base = bot_api
    text = "\n\n".join(f"Part {i} " + "x" * 3000 for i in range(3))
    ids = await _send(channel(api_base=base), text)
    assert [call.method for call in api.calls] == ["getMe"] + ["sendMessage"] * 3
    assert {call.token for call in api.calls} == {TOKEN}
    sent = api.sent()
    assert [params["chat_id"] for params in sent] == ["555001"] * 3
    assert [params["text"][:6] for params in sent] == ["Part 0", "Part 1", "Part 2"]
    assert ids == ["555001:101", "555001:102", "555001:103"]


async def test_attachments_go_by_url_as_a_photo_or_a_document(
    bot_api: tuple[FakeBotApi, str],
) -> None:
    api, base = bot_api
    photo = "https://cdn.example.org/tenis-azul.jpg"
    manual = "https://cdn.example.org/garantia.pdf"
    sender = channel(api_base=base)
    media = (
        Media(photo, caption="O tênis azul"),  # its type from the URL
        Media(manual, "application/pdf", caption="x" * 1500),
    )
    try:
        result = await sender.send(OutboundMessage("telegram", "555001", "Seguem:", media=media))
    finally:
        await sender.close()
    assert [call.method for call in api.calls] == [
        "getMe",
        "sendMessage",
        "sendPhoto",
        "sendDocument",
    ]
    [sent_photo] = api.sent("sendPhoto")
    assert (sent_photo["chat_id"], sent_photo["photo"], sent_photo["caption"]) == (
        "555001",
        photo,
        "O tênis azul",
    )
    [sent_document] = api.sent("sendDocument")
    assert sent_document["document"] == manual
    assert len(sent_document["caption"]) == 1024  # Telegram's caption limit
    assert list(result.provider_message_ids) == ["555001:101", "555001:102", "555001:103"]


async def test_an_attachment_alone_and_its_flood_wait(bot_api: tuple[FakeBotApi, str]) -> None:
    api, base = bot_api
    api.fail_next("sendDocument", 429, "Too Many Requests: retry after 0", retry_after=0)
    sender = channel(api_base=base)
    media = (Media("https://cdn.example.org/lista.csv", "text/csv"),)
    try:
        result = await sender.send(OutboundMessage("telegram", "555001", "", media=media))
    finally:
        await sender.close()
    assert [call.method for call in api.calls] == ["getMe", "sendDocument", "sendDocument"]
    assert "caption" not in api.sent("sendDocument")[-1]
    assert len(result.provider_message_ids) == 1


async def test_a_5000_character_reply_arrives_in_ordered_parts(
    bot_api: tuple[FakeBotApi, str],
) -> None:
    api, base = bot_api
    sentences = [f"Frase {i:03d} com um emoji 😀 no meio." for i in range(150)]
    text = " ".join(sentences)
    assert len(text) >= 5000 and utf16_units(text) > MAX_TEXT_UNITS
    ids = await _send(channel(api_base=base), text)
    parts = [params["text"] for params in api.sent()]
    assert len(parts) == 2 == len(ids)
    assert all(utf16_units(part) <= MAX_TEXT_UNITS for part in parts)
    assert all(part.startswith("Frase") and part.endswith("meio.") for part in parts)
    assert " ".join(parts) == text


async def test_flood_control_is_waited_out(bot_api: tuple[FakeBotApi, str]) -> None:
    api, base = bot_api
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    started = asyncio.get_running_loop().time()
    await _send(channel(api_base=base), "olá")
    assert asyncio.get_running_loop().time() - started >= 1.0
    assert [params["text"] for params in api.sent()] == ["olá", "olá"]


async def test_flood_control_in_integer_seconds_without_the_opt_in(
    bot_api: tuple[FakeBotApi, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, base = bot_api
    monkeypatch.delenv("PTB_TIMEDELTA")
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    with pytest.warns(PTBDeprecationWarning, match="retry_after"):
        await _send(channel(api_base=base), "olá")
    assert len(api.sent()) == 2


@pytest.mark.parametrize(
    ("status", "description"),
    [(403, "Forbidden: bot was blocked by the user"), (400, "Bad Request: chat not found")],
    ids=["blocked", "no-such-chat"],
)
async def test_a_refusal_is_not_retried(
    bot_api: tuple[FakeBotApi, str], status: int, description: str
) -> None:
    api, base = bot_api
    api.fail_next("sendMessage", status, description)
    with pytest.raises(SendFailed) as failed:
        await _send(channel(api_base=base), "olá")
    assert not failed.value.retryable
    assert description.partition(": ")[2] in str(failed.value).lower()
    assert len(api.sent()) == 1


async def test_server_errors_are_retried_with_backoff(bot_api: tuple[FakeBotApi, str]) -> None:
    api, base = bot_api
    api.fail_next("sendMessage", 502, "Bad Gateway")
    api.fail_next("sendMessage", 500, "Internal Server Error")
    assert await _send(channel(api_base=base), "olá") == ["555001:101"]
    assert len(api.sent()) == 3
    for _ in range(4):
        api.fail_next("sendMessage", 500, "Internal Server Error")
    with pytest.raises(SendFailed) as failed:
        await _send(channel(api_base=base, attempts=4), "olá")
    assert failed.value.retryable


async def test_a_rejected_token_is_not_retried_and_never_printed(
    bot_api: tuple[FakeBotApi, str],
) -> None:
    api, base = bot_api
    api.fail_next("getMe", 401, "Unauthorized")
    with pytest.raises(SendFailed) as failed:
        await _send(channel(api_base=base), "olá")
    assert not failed.value.retryable
    assert TOKEN not in str(failed.value) and api.sent() == []


async def test_an_unreachable_api_is_retryable(unused_tcp_port: int) -> None:
    with pytest.raises(SendFailed) as failed:
        await _send(channel(api_base=f"http://127.0.0.1:{unused_tcp_port}"), "olá")
    assert failed.value.retryable and TOKEN not in str(failed.value)


@pytest.mark.parametrize(
    ("options", "recipient"), [({}, "whatsapp:+5511998765432"), ({"token": None}, "555001")]
)
async def test_no_chat_id_or_no_token_fails_without_a_call(
    options: dict[str, Any], recipient: str
) -> None:
    with pytest.raises(SendFailed) as failed:
        await _send(channel(api_base="http://127.0.0.1:9", **options), "olá", recipient)
    assert not failed.value.retryable


# The typing action.


async def _typing(sender: TelegramChannel, recipient: str = "555001") -> None:
    try:
        await sender.typing(recipient, "555001:77")
    finally:
        await sender.close()


async def test_typing_sends_the_chat_action(bot_api: tuple[FakeBotApi, str]) -> None:
    api, base = bot_api
    sender = channel(api_base=base)
    assert isinstance(sender, TypingSignals) and sender.typing_repeat_s == 4.0
    await _typing(sender)
    assert [call.method for call in api.calls] == ["getMe", "sendChatAction"]
    assert api.sent("sendChatAction") == [{"chat_id": "555001", "action": "typing"}]


@pytest.mark.parametrize(
    ("status", "description", "retryable"),
    [
        (403, "Forbidden: bot was blocked by the user", False),
        (400, "Bad Request: chat not found", False),
        (502, "Bad Gateway", True),
    ],
    ids=["blocked", "no-such-chat", "server-error"],
)
async def test_a_failed_typing_action_is_one_attempt(
    bot_api: tuple[FakeBotApi, str], status: int, description: str, retryable: bool
) -> None:
    api, base = bot_api
    api.fail_next("sendChatAction", status, description)
    with pytest.raises(SendFailed) as failed:
        await _typing(channel(api_base=base))
    assert failed.value.retryable is retryable
    assert len(api.sent("sendChatAction")) == 1


# Flood control that is not waited out.


@pytest.mark.parametrize(
    ("method", "wait_s", "call"),
    [
        # A send waits out flood control up to its cap; a longer wait is the caller's.
        (
            "sendMessage",
            120,
            lambda base: _send(channel(api_base=base, max_retry_after_s=30), "olá"),
        ),
        # A typing action is one attempt: it never waits.
        ("sendChatAction", 3, lambda base: _typing(channel(api_base=base))),
    ],
    ids=["send-longer-than-the-cap", "typing"],
)
async def test_a_flood_wait_not_waited_out_is_left_to_the_caller_with_its_length(
    bot_api: tuple[FakeBotApi, str],
    method: str,
    wait_s: int,
    call: Callable[[str], Awaitable[object]],
) -> None:
    api, base = bot_api
    api.fail_next(method, 429, f"Too Many Requests: retry after {wait_s}", retry_after=wait_s)
    with pytest.raises(SendFailed) as failed:
        await call(base)
    assert failed.value.retryable and failed.value.retry_after_s == wait_s
    assert len(api.sent(method)) == 1


async def test_typing_to_no_chat_id_or_an_unreachable_api_fails(unused_tcp_port: int) -> None:
    with pytest.raises(SendFailed) as failed:
        await _typing(channel(api_base="http://127.0.0.1:9"), "whatsapp:+5511998765432")
    assert not failed.value.retryable
    with pytest.raises(SendFailed) as failed:
        await _typing(channel(api_base=f"http://127.0.0.1:{unused_tcp_port}"))
    assert failed.value.retryable and TOKEN not in str(failed.value)
