"""A provider webhook whose text no backend can store (NUL, which PostgreSQL refuses in text;
a lone surrogate, which no driver can encode) is a 400 with the reason and stores nothing, on
both backends — not a 500 deep in the insert."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest
from twilio.request_validator import RequestValidator

from channels.telegram import SECRET_HEADER
from tests.support.stack import Stack, inbound_rows, running_stack

BACKENDS = ["embedded", "production"]
TWILIO_TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "a" * 32
BOT = "whatsapp:+14155238886"
PUBLIC = "https://relay.example.org"
TELEGRAM_SECRET = "webhook-secret_for-tests"
SETTINGS = {
    "TWILIO_ACCOUNT_SID": ACCOUNT,
    "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
    "TWILIO_WHATSAPP_FROM": BOT,
    "RELAYDESK_PUBLIC_URL": PUBLIC,
    "TELEGRAM_BOT_TOKEN": "123456:telegram-token-for-tests",
    "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
}


async def _rows(stack: Stack) -> int:
    return await inbound_rows(stack)


async def _twilio(stack: Stack, **fields: str) -> tuple[int, dict[str, str]]:
    params = {
        "MessageSid": "SM" + uuid.uuid4().hex,
        "AccountSid": ACCOUNT,
        "From": "whatsapp:+5511998765432",
        "To": BOT,
        "Body": "Oi",
        "NumMedia": "0",
        "ProfileName": "Ana",
        **fields,
    }
    path = "/webhooks/twilio/whatsapp"
    signature = RequestValidator(TWILIO_TOKEN).compute_signature(PUBLIC + path, params)
    response = await stack.client.post(
        path,
        data=urlencode(params).encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Twilio-Signature": signature,
        },
    )
    return response.status, await response.json() if response.status != 200 else {}


async def _telegram(stack: Stack, raw_text: str) -> tuple[int, dict[str, str]]:
    """`raw_text` goes into the JSON as written, escapes included."""
    user = 700000001
    update_id = uuid.uuid4().int % 10**9
    body = (
        f'{{"update_id": {update_id}, "message": {{"message_id": 1, "date": 1764400000, '
        f'"from": {{"id": {user}, "is_bot": false, "first_name": "Ana"}}, '
        f'"chat": {{"id": {user}, "type": "private"}}, "text": "{raw_text}"}}}}'
    )
    json.loads(body)  # well-formed JSON: only the text is the problem
    response = await stack.client.post(
        "/webhooks/telegram",
        data=body.encode(),
        headers={"Content-Type": "application/json", SECRET_HEADER: TELEGRAM_SECRET},
    )
    payload = await response.json()
    return response.status, payload


@pytest.mark.parametrize("backend", BACKENDS)
async def test_unstorable_text_is_a_400_and_stores_nothing(backend: str, tmp_path: Path) -> None:
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        for fields in ({"Body": "meu pedido\x00 4471"}, {"ProfileName": "An\x00a"}):
            status, error = await _twilio(stack, **fields)
            assert status == 400, (fields, error)
            assert error["error"] == "invalid_payload" and "NUL" in error["detail"]
        for raw in ("pedido \\u0000 4471", "pedido \\ud800 4471"):
            status, error = await _telegram(stack, raw)
            assert status == 400, (raw, error)
            assert error["error"] == "invalid_payload"
        assert await _rows(stack) == 0

        # Ordinary text right after still goes through.
        status, _ = await _twilio(stack, Body="meu pedido 4471 chegou?")
        assert status == 200
        status, _ = await _telegram(stack, "pedido 4471 \\u00e9 meu")
        assert status == 200
        assert await _rows(stack) == 2
