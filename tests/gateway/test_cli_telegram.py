"""`relaydesk telegram set-webhook` through python-telegram-bot to a local Bot API server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gateway.cli import build_parser
from gateway.config import Settings
from tests.support.telegram_server import FakeBotApi

TOKEN = "123456:TEST-token_abcdefghijklmnop"
SECRET = "webhook-secret_for-tests"


async def run(argv: list[str], **settings: Any) -> int:
    """The subcommand as `relaydesk` runs it (its own event loop, so in a thread here)."""
    args = build_parser().parse_args(argv)
    values = Settings(**settings)
    code: int = await asyncio.to_thread(args.run, values, args)
    return code


async def test_set_webhook_registers_the_public_url_with_the_secret(
    bot_api: tuple[FakeBotApi, str], capsys: pytest.CaptureFixture[str]
) -> None:
    api, base = bot_api
    code = await run(
        ["telegram", "set-webhook"],
        TELEGRAM_BOT_TOKEN=TOKEN,
        TELEGRAM_WEBHOOK_SECRET=SECRET,
        TELEGRAM_API_BASE=base,
        RELAYDESK_PUBLIC_URL="https://relay.example.org/",
    )
    assert code == 0
    (call,) = [c for c in api.calls if c.method == "setWebhook"]
    assert call.token == TOKEN
    assert call.params["url"] == "https://relay.example.org/webhooks/telegram"
    assert call.params["secret_token"] == SECRET
    assert json.loads(call.params["allowed_updates"]) == [
        "message",
        "edited_message",
        "callback_query",
    ]
    assert "drop_pending_updates" not in call.params
    assert "https://relay.example.org/webhooks/telegram" in capsys.readouterr().out


async def test_set_webhook_with_an_explicit_url_and_dropping_pending_updates(
    bot_api: tuple[FakeBotApi, str],
) -> None:
    api, base = bot_api
    code = await run(
        ["telegram", "set-webhook", "--url", "https://bots.example.net/tg", "--drop-pending"],
        TELEGRAM_BOT_TOKEN=TOKEN,
        TELEGRAM_WEBHOOK_SECRET=SECRET,
        TELEGRAM_API_BASE=base,
    )
    assert code == 0
    (params,) = api.sent("setWebhook")
    assert params["url"] == "https://bots.example.net/tg"
    assert params["drop_pending_updates"] == "true"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"TELEGRAM_WEBHOOK_SECRET": SECRET}, "TELEGRAM_BOT_TOKEN"),
        ({"TELEGRAM_BOT_TOKEN": TOKEN}, "TELEGRAM_WEBHOOK_SECRET"),
        ({"TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_WEBHOOK_SECRET": SECRET}, "RELAYDESK_PUBLIC_URL"),
        (
            {
                "TELEGRAM_BOT_TOKEN": TOKEN,
                "TELEGRAM_WEBHOOK_SECRET": "has spaces!",
                "RELAYDESK_PUBLIC_URL": "https://relay.example.org",
            },
            "TELEGRAM_WEBHOOK_SECRET must be",
        ),
    ],
    ids=["no-token", "no-secret", "no-url", "secret-in-a-format-telegram-refuses"],
)
async def test_set_webhook_says_what_is_missing_without_calling_telegram(
    bot_api: tuple[FakeBotApi, str],
    capsys: pytest.CaptureFixture[str],
    settings: dict[str, str],
    named: str,
) -> None:
    api, base = bot_api
    code = await run(["telegram", "set-webhook"], TELEGRAM_API_BASE=base, **settings)
    assert code == 2
    assert named in capsys.readouterr().err
    assert api.calls == []


async def test_a_refused_webhook_is_reported_without_the_token(
    bot_api: tuple[FakeBotApi, str], capsys: pytest.CaptureFixture[str]
) -> None:
    api, base = bot_api
    api.fail_next("setWebhook", 400, "Bad Request: bad webhook: HTTPS url must be provided")
    code = await run(
        ["telegram", "set-webhook", "--url", "http://relay.example.org/webhooks/telegram"],
        TELEGRAM_BOT_TOKEN=TOKEN,
        TELEGRAM_WEBHOOK_SECRET=SECRET,
        TELEGRAM_API_BASE=base,
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "https url must be provided" in err.lower() and TOKEN not in err
