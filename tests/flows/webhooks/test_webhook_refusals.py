"""Provider webhooks refuse what they cannot read with a 4xx in the error shape, before any
signature is trusted and with nothing stored: a body in another format than the provider
posts is a 415 (even unsigned), a body nested too deep a 400, never a 500."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from twilio.request_validator import RequestValidator

from channels.telegram import SECRET_HEADER
from tests.support.stack import Stack, inbound_rows, running_stack

PUBLIC_URL = "https://relay.example.org"
TWILIO_TOKEN = "twilio-auth-token-for-tests"
TELEGRAM_SECRET = "webhook-secret_for-tests"
CLOUD_SECRET = "app-secret-for-tests"
UNREACHABLE = "http://127.0.0.1:9"  # nothing here is ever answered, so nothing is sent
TWILIO_PATHS = ("/webhooks/twilio/whatsapp", "/webhooks/twilio/status")
TELEGRAM_PATH = "/webhooks/telegram"
CLOUD_PATH = "/webhooks/whatsapp/cloud"
FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
MESSAGE = {
    "MessageSid": "SM" + "0" * 32,
    "AccountSid": "AC" + "0" * 32,
    "From": "whatsapp:+5511998765432",
    "To": "whatsapp:+14155238886",
    "Body": "oi",
    "NumMedia": "0",
}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    settings = {
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": UNREACHABLE,
        "TELEGRAM_BOT_TOKEN": "123456:TEST-token_abcdefghijklmnop",
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE": UNREACHABLE,
        "WHATSAPP_CLOUD_API_BASE": UNREACHABLE,
        "WHATSAPP_CLOUD_VERIFY_TOKEN": "verify-token-for-tests",
        "WHATSAPP_CLOUD_APP_SECRET": CLOUD_SECRET,
        "WHATSAPP_CLOUD_ACCESS_TOKEN": "access-token-for-tests",
        "WHATSAPP_CLOUD_PHONE_NUMBER_ID": "106540352242922",
    }
    async with running_stack("embedded", tmp_path, **settings) as running:
        yield running


async def _refused(
    stack: Stack, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, str]:
    """POST ``body``; its status and error code (the answer must be the error shape)."""
    response = await stack.client.post(path, data=body, headers=headers)
    answer = await response.json()
    assert set(answer) == {"error", "detail"} and answer["detail"], answer
    return response.status, answer["error"]


def _cloud_signed(raw: bytes) -> dict[str, str]:
    digest = hmac.new(CLOUD_SECRET.encode(), raw, hashlib.sha256).hexdigest()
    return {"Content-Type": JSON, "X-Hub-Signature-256": f"sha256={digest}"}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


async def test_a_twilio_webhook_with_a_json_body_is_415_signed_or_not(stack: Stack) -> None:
    body = json.dumps(MESSAGE).encode()
    for path in TWILIO_PATHS:
        signature = RequestValidator(TWILIO_TOKEN).compute_signature(PUBLIC_URL + path, MESSAGE)
        for headers in (
            {"Content-Type": JSON, "X-Twilio-Signature": signature},
            {"Content-Type": JSON},
            {"Content-Type": "text/plain", "X-Twilio-Signature": signature},
            {"Content-Type": "multipart/form-data; boundary=x"},
        ):
            assert await _refused(stack, path, body, headers) == (415, "unsupported_media_type")
        # Twilio's own way of signing JSON (the body's hash in the URL): still not a form.
        query = "?bodySHA256=" + hashlib.sha256(body).hexdigest()
        url = PUBLIC_URL + path + query
        signed = {
            "Content-Type": JSON,
            "X-Twilio-Signature": RequestValidator(TWILIO_TOKEN).compute_signature(url, {}),
        }
        status = await _refused(stack, path + query, body, signed)
        assert status == (415, "unsupported_media_type")
    # The same message as a form is read (and its signature checked): the door is open to it.
    unsigned_form = await _refused(
        stack, TWILIO_PATHS[0], urlencode(MESSAGE).encode(), {"Content-Type": FORM}
    )
    assert unsigned_form == (403, "invalid_signature")
    assert await inbound_rows(stack) == 0


async def test_telegram_and_cloud_webhooks_take_only_json(stack: Stack) -> None:
    form = urlencode({"update_id": "1"}).encode()
    for headers in (
        {"Content-Type": FORM, SECRET_HEADER: TELEGRAM_SECRET},
        {"Content-Type": "text/plain", SECRET_HEADER: TELEGRAM_SECRET},
        {SECRET_HEADER: TELEGRAM_SECRET},  # no type at all
    ):
        assert await _refused(stack, TELEGRAM_PATH, form, headers) == (
            415,
            "unsupported_media_type",
        )
    signed = {**_cloud_signed(form), "Content-Type": FORM}
    assert await _refused(stack, CLOUD_PATH, form, signed) == (415, "unsupported_media_type")
    assert await inbound_rows(stack) == 0


async def test_a_signed_cloud_body_nested_50000_levels_is_400(stack: Stack) -> None:
    raw = _nested(50_000).encode()
    assert await _refused(stack, CLOUD_PATH, raw, _cloud_signed(raw)) == (400, "invalid_payload")
    assert await inbound_rows(stack) == 0


@pytest.mark.parametrize("depth", [50_000, 200])
async def test_every_json_webhook_refuses_a_deep_body_with_400(stack: Stack, depth: int) -> None:
    # Well-formed envelopes carrying one deep field: below the interpreter's recursion limit
    # (200) json.loads reads it, and only the nesting bound refuses it.
    telegram = f'{{"update_id": 1, "deep": {_nested(depth)}}}'.encode()
    refused = await _refused(
        stack, TELEGRAM_PATH, telegram, {"Content-Type": JSON, SECRET_HEADER: TELEGRAM_SECRET}
    )
    assert refused == (400, "invalid_payload")
    cloud = f'{{"object": "whatsapp_business_account", "entry": [], "deep": {_nested(depth)}}}'
    raw = cloud.encode()
    assert await _refused(stack, CLOUD_PATH, raw, _cloud_signed(raw)) == (400, "invalid_payload")
    assert await inbound_rows(stack) == 0
