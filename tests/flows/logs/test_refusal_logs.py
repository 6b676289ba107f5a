"""Every refused request says why in one INFO line (`relaydesk.refusals`), through the real
HTTP surface: provider signatures and secrets, malformed and oversized bodies, forged visitor
ids, bad websocket frames, missing credentials and rate limits. The line names the reason by
its stable name and never carries the secret, the token or the body it refused."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import WSMsgType

from channels.telegram import SECRET_HEADER
from devtools.twilio_webhook import signed_form
from gateway.runtime.logs import JsonFormatter
from tests.support.console import post_login
from tests.support.signed_twilio import inbound_params
from tests.support.stack import WEBCHAT_SECRET, Stack, running_stack
from tests.support.webchat import signed_visitor

PUBLIC_URL = "https://relay.example.org"
TWILIO_TOKEN = "twilio-auth-token-for-tests"
TELEGRAM_SECRET = "webhook-secret_for-tests"
CLOUD_SECRET = "app-secret-for-tests"
VERIFY_TOKEN = "verify-token-for-tests"
UNREACHABLE = "http://127.0.0.1:9"
TWILIO_PATH = "/webhooks/twilio/whatsapp"
TELEGRAM_PATH = "/webhooks/telegram"
CLOUD_PATH = "/webhooks/whatsapp/cloud"
MAX_BODY = 2048
FORGED_VISITOR = "forged-visitor-0123456789"


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    settings: dict[str, Any] = {
        "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
        "RELAYDESK_MAX_BODY_BYTES": MAX_BODY,
        # The test client's peer is 127.0.0.1: a trusted proxy, so X-Forwarded-For names clients.
        "RELAYDESK_TRUSTED_PROXIES": "127.0.0.1",
        "TWILIO_ACCOUNT_SID": "AC" + "0" * 32,
        "TWILIO_AUTH_TOKEN": TWILIO_TOKEN,
        "TWILIO_WHATSAPP_FROM": "whatsapp:+14155238886",
        "TWILIO_API_BASE": UNREACHABLE,
        "TELEGRAM_BOT_TOKEN": "123456:TEST-token_abcdefghijklmnop",
        "TELEGRAM_WEBHOOK_SECRET": TELEGRAM_SECRET,
        "TELEGRAM_API_BASE": UNREACHABLE,
        "WHATSAPP_CLOUD_API_BASE": UNREACHABLE,
        "WHATSAPP_CLOUD_VERIFY_TOKEN": VERIFY_TOKEN,
        "WHATSAPP_CLOUD_APP_SECRET": CLOUD_SECRET,
        "WHATSAPP_CLOUD_ACCESS_TOKEN": "access-token-for-tests",
        "WHATSAPP_CLOUD_PHONE_NUMBER_ID": "106540352242922",
    }
    async with running_stack("embedded", tmp_path, **settings) as running:
        yield running


@pytest.fixture(autouse=True)
def info(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="relaydesk")


def refusals(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The fields of every refusal line so far."""
    return [
        record.fields  # type: ignore[attr-defined]
        for record in caplog.records
        if record.name == "relaydesk.refusals" and record.levelno == logging.INFO
    ]


def the_refusal(caplog: pytest.LogCaptureFixture) -> dict[str, Any]:
    [line] = refusals(caplog)
    return line


def printed(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured line as the JSON formatter prints it."""
    formatter = JsonFormatter()
    return "\n".join(formatter.format(record) for record in caplog.records)


def _cloud_signature(raw: bytes, secret: str = CLOUD_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


async def test_a_twilio_signature_over_another_url_names_the_url_it_was_checked_over(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    # Twilio's console still points at the tunnel the newcomer used before.
    text = "quero falar do meu pedido"
    params = inbound_params("SM" + "1" * 32, "whatsapp:+5511998765432", text, account="AC0")
    old_url = "https://old-tunnel.example.net" + TWILIO_PATH
    headers, body = signed_form(old_url, params, TWILIO_TOKEN)
    response = await stack.client.post(TWILIO_PATH, data=body, headers=headers)
    assert response.status == 403
    line = the_refusal(caplog)
    assert line["reason"] == "signature_mismatch"
    assert line["signed_url"] == PUBLIC_URL + TWILIO_PATH
    assert line["route"] == TWILIO_PATH and line["method"] == "POST"
    assert line["request_id"] == response.headers["X-Request-Id"]
    assert headers["X-Twilio-Signature"] not in printed(caplog)
    assert TWILIO_TOKEN not in printed(caplog)
    assert text not in printed(caplog) and "5511998765432" not in printed(caplog)


async def test_a_cloud_api_body_with_a_wrong_signature_is_a_signature_mismatch(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    raw = b'{"object": "whatsapp_business_account", "entry": []}'
    wrong = _cloud_signature(raw, "another-app-secret")
    response = await stack.client.post(
        CLOUD_PATH,
        data=raw,
        headers={"Content-Type": "application/json", "X-Hub-Signature-256": wrong},
    )
    assert response.status == 403
    line = the_refusal(caplog)
    assert line["reason"] == "signature_mismatch"
    assert "X-Hub-Signature-256" in line["detail"]
    assert wrong not in printed(caplog) and CLOUD_SECRET not in printed(caplog)


async def test_a_wrong_telegram_secret_is_bad_secret(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    response = await stack.client.post(
        TELEGRAM_PATH,
        data=b'{"update_id": 1}',
        headers={"Content-Type": "application/json", SECRET_HEADER: "guessed-secret"},
    )
    assert response.status == 403
    assert the_refusal(caplog)["reason"] == "bad_secret"
    assert "guessed-secret" not in printed(caplog) and TELEGRAM_SECRET not in printed(caplog)


async def test_a_subscription_check_with_another_verify_token_is_bad_verify_token(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": "typed-wrong", "hub.challenge": "42"}
    response = await stack.client.get(CLOUD_PATH, params=query)
    assert response.status == 403
    line = the_refusal(caplog)
    assert line["reason"] == "bad_verify_token" and line["method"] == "GET"
    assert "typed-wrong" not in printed(caplog)


async def test_a_signed_body_that_is_not_json_is_malformed(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    raw = b'{"object": "whatsapp_business_account", "entry": [}'
    response = await stack.client.post(
        CLOUD_PATH,
        data=raw,
        headers={"Content-Type": "application/json", "X-Hub-Signature-256": _cloud_signature(raw)},
    )
    assert response.status == 400
    line = the_refusal(caplog)
    assert line["reason"] == "malformed" and "JSON" in line["detail"]


async def test_a_form_posted_to_a_json_webhook_is_unsupported_media_type(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    response = await stack.client.post(
        TELEGRAM_PATH,
        data=b"update_id=1",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status == 415
    assert the_refusal(caplog)["reason"] == "unsupported_media_type"


async def test_a_declared_or_chunked_body_past_the_limit_is_too_large(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    big = b'{"pad": "' + b"x" * (MAX_BODY * 2) + b'"}'
    declared = await stack.client.post(
        "/webchat/messages", data=big, headers={"Content-Type": "application/json"}
    )
    assert declared.status == 413

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * MAX_BODY

    chunked = await stack.client.post(
        TELEGRAM_PATH,
        data=chunks(),
        headers={"Content-Type": "application/json", SECRET_HEADER: TELEGRAM_SECRET},
    )
    assert chunked.status == 413
    assert [(line["reason"], line["route"]) for line in refusals(caplog)] == [
        ("too_large", "/webchat/messages"),
        ("too_large", TELEGRAM_PATH),
    ]
    assert "xxxx" not in printed(caplog)


async def test_a_forged_visitor_id_is_invalid_visitor_id_over_rest_and_websocket(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"visitor_id": FORGED_VISITOR, "text": "olá", "client_message_id": "c-1"}
    response = await stack.client.post("/webchat/messages", json=body)
    assert response.status == 403
    async with stack.client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": FORGED_VISITOR})
        assert (await socket.receive_json())["error"] == "invalid_visitor_id"
    lines = refusals(caplog)
    assert [(line["reason"], line["route"]) for line in lines] == [
        ("invalid_visitor_id", "/webchat/messages"),
        ("invalid_visitor_id", "/webchat/ws"),
    ]
    assert lines[1]["frame"] == "hello"


async def test_bad_websocket_frames_are_bad_frame_and_the_socket_stays_open(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    visitor = await signed_visitor(stack.client)
    async with stack.client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": visitor})
        assert (await socket.receive_json())["type"] == "ready"
        await socket.send_str("{not json")
        assert (await socket.receive_json())["error"] == "bad_frame"
        await socket.send_json({"type": "shout"})
        assert (await socket.receive_json())["error"] == "bad_frame"
        await socket.send_bytes(b"\x00\x01")
        await socket.send_str("{not json either")  # still read: the binary frame was skipped
        assert (await socket.receive_json())["error"] == "bad_frame"
    lines = refusals(caplog)
    assert [(line["reason"], line["frame"]) for line in lines] == [
        ("bad_frame", "text"),
        ("bad_frame", "text"),
        ("bad_frame", "binary"),
        ("bad_frame", "text"),
    ]
    assert "unknown frame type" in lines[1]["detail"]


async def test_a_frame_past_64_kib_is_bad_frame_and_closes_the_socket(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    visitor = await signed_visitor(stack.client)
    async with stack.client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": visitor})
        assert (await socket.receive_json())["type"] == "ready"
        await socket.send_str("x" * 70_000)
        assert (await socket.receive()).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
    [line] = refusals(caplog)
    assert (line["reason"], line["frame"]) == ("bad_frame", "error")
    assert "xxxx" not in printed(caplog)


async def test_an_api_call_without_its_key_is_unauthorized(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    response = await stack.client.get(
        "/v1/campaigns/42", headers={"Authorization": "Bearer not-the-key"}
    )
    assert response.status == 401
    line = the_refusal(caplog)
    assert line["reason"] == "unauthorized"
    assert line["route"] == "/v1/campaigns/{campaign_id}"
    assert "not-the-key" not in printed(caplog)


async def test_console_logins_refused_say_why(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    answer = await post_login(stack.client, "ana", "hunter2-wrong")
    assert answer.status == 401
    expired = await stack.client.post(
        "/console/login", data={"username": "ana", "password": "hunter2-wrong", "csrf_token": "x"}
    )
    assert expired.status == 403
    lines = refusals(caplog)
    assert [(line["reason"], line["route"]) for line in lines] == [
        ("bad_login", "/console/login"),
        ("csrf_failed", "/console/login"),
    ]
    assert "hunter2-wrong" not in printed(caplog)


async def test_a_request_past_a_rate_limit_is_rate_limited_with_its_client(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    client = {"X-Forwarded-For": "203.0.113.7"}
    statuses = [
        (await stack.client.post("/webchat/visitors", headers=client)).status for _ in range(61)
    ]
    assert statuses[-1] == 429 and statuses.count(201) == 60
    line = the_refusal(caplog)
    assert line["reason"] == "rate_limited"
    assert line["client"] == "203.0.113.7" and line["route"] == "/webchat/visitors"


async def test_a_webhook_of_a_channel_not_configured_here_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_stack("embedded", tmp_path) as bare:  # no Telegram settings at all
        response = await bare.client.post(
            TELEGRAM_PATH, json={"update_id": 1}, headers={SECRET_HEADER: TELEGRAM_SECRET}
        )
        assert response.status == 403
    line = the_refusal(caplog)
    assert line["reason"] == "channel_not_configured" and line["route"] == TELEGRAM_PATH
    assert "TELEGRAM_WEBHOOK_SECRET" in line["detail"]


async def test_a_websocket_frame_past_the_visitors_rate_is_rate_limited(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    visitor = await signed_visitor(stack.client)
    async with stack.client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": visitor})
        assert (await socket.receive_json())["type"] == "ready"
        errors: list[str] = []
        for _ in range(61):  # the default: 60 frames a minute per visitor
            await socket.send_json({"type": "ping"})
            errors.append((await socket.receive_json())["error"])
    assert errors[-1] == "rate_limited" and errors.count("bad_frame") == 60
    assert [line["reason"] for line in refusals(caplog)] == ["bad_frame"] * 60 + ["rate_limited"]
    assert refusals(caplog)[-1]["frame"] == "text"


def _identity_token(account: str) -> str:
    claims = {"sub": account, "exp": int(time.time()) + 600}
    return jwt.encode(claims, WEBCHAT_SECRET, algorithm="HS256")


async def test_a_signed_in_thread_read_without_its_token_says_whose_token_is_missing(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    visitor = await signed_visitor(stack.client)
    owner = {"Authorization": f"Bearer {_identity_token('acct-owner')}"}
    body = {"visitor_id": visitor, "text": "Meu pedido", "client_message_id": "c-1"}
    assert (await stack.client.post("/webchat/messages", json=body, headers=owner)).status == 202
    await stack.idle()
    other_token = _identity_token("acct-other")
    other = {"Authorization": f"Bearer {other_token}"}
    for headers, status in (({}, 401), (other, 403)):
        read = await stack.client.get(
            "/webchat/messages", params={"visitor_id": visitor}, headers=headers
        )
        assert read.status == status
    assert [(line["reason"], line["route"]) for line in refusals(caplog)] == [
        ("identity_required", "/webchat/messages"),
        ("identity_mismatch", "/webchat/messages"),
    ]
    assert other_token not in printed(caplog)


async def test_a_body_that_stops_arriving_is_body_timeout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_stack("embedded", tmp_path, RELAYDESK_BODY_TIMEOUT_S=0.3) as slow:
        server = slow.client.server
        reader, writer = await asyncio.open_connection(server.host, server.port)
        head = (
            "POST /webchat/messages HTTP/1.1\r\nHost: relay\r\n"
            "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n"
        )
        writer.write(head.encode() + b'{"visitor_id": ')  # and then nothing more
        await writer.drain()
        await asyncio.wait_for(reader.read(), timeout=5)  # the server closes the connection
        writer.close()
    line = the_refusal(caplog)
    assert line["reason"] == "body_timeout" and line["route"] == "/webchat/messages"
