"""One access line per request at INFO, through the real gateway: the method, the matched
route's pattern (never the raw ids), the status, the duration, the request id it answers in
`X-Request-Id`, and the client as the trusted-proxy rule sees it."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.runtime.logs import configure_logging
from tests.support.stack import API_KEY, Stack, running_stack

AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    # The test client's peer is 127.0.0.1: a trusted proxy, so X-Forwarded-For names clients.
    async with running_stack("embedded", tmp_path, RELAYDESK_TRUSTED_PROXIES="127.0.0.1") as s:
        yield s


@pytest.fixture
def printed() -> Iterator[io.StringIO]:
    """The process's log output as `relaydesk serve` configures it, at INFO."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)


def access_lines(out: io.StringIO) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return [line for line in lines if line["logger"] == "relaydesk.access"]


async def test_every_request_has_one_access_line_at_info(
    stack: Stack, printed: io.StringIO
) -> None:
    headers = {**AUTH, "X-Forwarded-For": "198.51.100.23"}
    found = await stack.client.get("/v1/campaigns/12345", headers=headers)
    assert found.status == 404
    health = await stack.client.get("/healthz")
    assert health.status == 200
    nowhere = await stack.client.get("/no/such/page/98765")
    assert nowhere.status == 404
    lines = access_lines(printed)
    assert [(line["level"], line["method"], line["route"], line["status"]) for line in lines] == [
        ("info", "GET", "/v1/campaigns/{campaign_id}", 404),
        ("info", "GET", "/healthz", 200),
        ("info", "GET", "unmatched", 404),
    ]
    assert lines[0]["client"] == "198.51.100.23"
    assert lines[1]["client"] == "127.0.0.1"
    for line, response in zip(lines, (found, health, nowhere), strict=True):
        assert line["request_id"] == response.headers["X-Request-Id"]
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert "12345" not in printed.getvalue() and "98765" not in printed.getvalue()


async def test_a_forwarded_address_from_an_untrusted_peer_is_not_believed(
    tmp_path: Path, printed: io.StringIO
) -> None:
    async with running_stack("embedded", tmp_path) as stack:  # no trusted proxies
        await stack.client.get("/healthz", headers={"X-Forwarded-For": "198.51.100.23"})
    [line] = access_lines(printed)
    assert line["client"] == "127.0.0.1"


async def test_a_plain_request_id_from_the_caller_is_kept_and_anything_else_replaced(
    stack: Stack, printed: io.StringIO
) -> None:
    kept = await stack.client.get("/healthz", headers={"X-Request-Id": "nginx-7f3a.42"})
    forged = '", "level": "error", "x": "' + "a" * 80
    replaced = await stack.client.get("/healthz", headers={"X-Request-Id": forged})
    assert kept.headers["X-Request-Id"] == "nginx-7f3a.42"
    new_id = replaced.headers["X-Request-Id"]
    assert new_id != forged and len(new_id) == 32
    assert [line["request_id"] for line in access_lines(printed)] == ["nginx-7f3a.42", new_id]


async def test_a_websocket_is_one_line_when_it_closes(stack: Stack, printed: io.StringIO) -> None:
    async with stack.client.ws_connect("/webchat/ws") as socket:
        await socket.send_json({"type": "hello", "visitor_id": "forged-visitor-0123456789"})
        await socket.receive_json()
    await stack.client.get("/healthz")  # the socket's line is written before this one's
    lines = access_lines(printed)
    assert [(line["route"], line["status"]) for line in lines] == [
        ("/webchat/ws", 101),
        ("/healthz", 200),
    ]
