"""The web chat doors' rate limits through the real gateway, with the default tenant settings, on
both backends (`embedded`: counted in the process; `production`: counted in Redis): new visitor
ids per client address, REST messages per visitor (429 with `Retry-After`, nothing stored) and
websocket frames per visitor (an error frame in the refused frame's place, the socket open)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.support.shared_gateways import next_frame
from tests.support.stack import Stack, inbound_rows, running_stack
from tests.support.webchat import signed_visitor

# The default limits (tests/gateway/test_tenants.py checks they still are).
VISITOR_IDS = 60  # "60/hour" per client address
MESSAGES = 20  # "20/minute" per visitor
FRAMES = 60  # "60/minute" per visitor


@pytest.fixture(params=["embedded", "production"])
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    # The test client's peer is 127.0.0.1: a trusted proxy, so X-Forwarded-For names clients.
    async with running_stack(request.param, tmp_path, RELAYDESK_TRUSTED_PROXIES="127.0.0.1") as s:
        yield s


async def _refused_by_door(client: TestClient) -> dict[str, float]:  # type: ignore[type-arg]
    response = await client.get("/metrics")
    text = await response.text()
    return {
        sample.labels["door"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "relaydesk_rate_limited"
        for sample in family.samples
        if sample.name == "relaydesk_rate_limited_total"
    }


async def _new_visitor(client: TestClient, address: str) -> tuple[int, Any, dict[str, str]]:  # type: ignore[type-arg]
    response = await client.post("/webchat/visitors", headers={"X-Forwarded-For": address})
    return response.status, await response.json(), dict(response.headers)


async def test_new_visitor_ids_stop_at_the_limit_per_client_address(stack: Stack) -> None:
    client = stack.client
    for _ in range(VISITOR_IDS):
        status, body, _ = await _new_visitor(client, "203.0.113.7")
        assert status == 201, body
    status, body, headers = await _new_visitor(client, "203.0.113.7")
    assert status == 429
    assert body["error"] == "rate_limited" and "visitor ids" in body["detail"]
    # The hour's window frees a slot an hour after the first id was issued.
    assert 3500 <= int(headers["Retry-After"]) <= 3600
    # Another client behind the same proxy is counted apart.
    status, body, _ = await _new_visitor(client, "198.51.100.20")
    assert status == 201, body
    assert (await _refused_by_door(client))["visitor_ids"] == 1


async def _post(client: TestClient, visitor: str, text: str) -> tuple[int, Any, dict[str, str]]:  # type: ignore[type-arg]
    response = await client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": uuid.uuid4().hex},
    )
    return response.status, await response.json(), dict(response.headers)


async def test_web_chat_messages_past_the_visitor_limit_are_refused_and_not_stored(
    stack: Stack,
) -> None:
    client = stack.client
    visitor = await signed_visitor(client)
    for index in range(MESSAGES):
        status, body, _ = await _post(client, visitor, f"mensagem {index}")
        assert status == 202, body
    status, body, headers = await _post(client, visitor, "uma a mais")
    assert status == 429
    assert body["error"] == "rate_limited" and "this visitor" in body["detail"]
    assert 1 <= int(headers["Retry-After"]) <= 60
    assert await inbound_rows(stack) == MESSAGES
    # Another visitor is not held back by this one.
    status, body, _ = await _post(client, await signed_visitor(client), "oi")
    assert status == 202, body
    assert (await _refused_by_door(client))["webchat_messages"] == 1
    await stack.idle()


async def test_websocket_frames_past_the_limit_get_an_error_frame_and_store_nothing(
    stack: Stack,
) -> None:
    client = stack.client
    visitor = await signed_visitor(client)
    async with client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": visitor})
        assert (await next_frame(socket))["type"] == "ready"
        # Each message frame is answered in order (an ack or an error); replies and typing
        # signals come in between.
        answers: list[dict[str, Any]] = []
        for index in range(FRAMES + 1):
            await socket.send_json(
                {"type": "message", "text": f"linha {index}", "client_message_id": f"c{index:04d}"}
            )
            while True:
                frame = await next_frame(socket)
                if frame["type"] in ("ack", "error"):
                    answers.append(frame)
                    break
        assert [a["type"] for a in answers] == ["ack"] * FRAMES + ["error"]
        refused = answers[-1]
        assert refused["error"] == "rate_limited"
        assert 1 <= refused["retry_after_s"] <= 60
        # The socket stays open: the widget may resend the message later.
        await socket.send_json({"type": "ping"})
        assert not socket.closed
        assert (await socket.receive(timeout=0.2)).type is not WSMsgType.CLOSE
    assert await inbound_rows(stack) == FRAMES
    assert (await _refused_by_door(client))["webchat_frames"] >= 1
    await stack.idle()
