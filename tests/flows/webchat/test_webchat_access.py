"""Who may use a web chat thread, through the real gateway on both backends: only visitor ids the
server issued get in (nothing stored otherwise), an anonymous thread is read with its visitor
id, and a thread a signed-in account wrote in only with that account's identity token."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient

from tests.support.shared_gateways import next_frame
from tests.support.stack import WEBCHAT_SECRET, Stack, inbound_rows, running_stack
from tests.support.webchat import signed_visitor


@pytest.fixture(params=["embedded", "production"])
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(request.param, tmp_path) as running:
        yield running


def _token(account: str, secret: str = WEBCHAT_SECRET) -> str:
    return jwt.encode({"sub": account, "exp": int(time.time()) + 600}, secret, algorithm="HS256")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _post(
    client: TestClient,  # type: ignore[type-arg]
    visitor: str,
    text: str,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    response = await client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": uuid.uuid4().hex},
        headers=headers or {},
    )
    return response.status, await response.json()


async def _read(
    client: TestClient,  # type: ignore[type-arg]
    visitor: str,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    response = await client.get(
        "/webchat/messages", params={"visitor_id": visitor}, headers=headers or {}
    )
    return response.status, await response.json()


async def _hello(client: TestClient, visitor: str, token: str | None = None) -> Any:  # type: ignore[type-arg]
    socket = await client.ws_connect("/webchat/ws")
    await socket.send_json(
        {"type": "hello", "visitor_id": visitor, "identity_token": token, "after": None}
    )
    return socket


async def _refused(socket: Any, error: str) -> None:
    frame = await next_frame(socket)
    assert frame["type"] == "error" and frame["error"] == error, frame
    closing = await socket.receive(timeout=10)
    assert closing.type in (WSMsgType.CLOSE, WSMsgType.CLOSED, WSMsgType.CLOSING)
    assert socket.close_code == 1008


def _forgeries(genuine: str) -> list[str]:
    random_part, _, mac = genuine.partition("_")
    flipped = mac[:-1] + ("0" if mac[-1] != "0" else "1")
    return [
        "v" + uuid.uuid4().hex,  # what the widget used to make up
        f"{random_part}_{flipped}",  # a signature one character off
        f"{uuid.uuid4().hex}_{mac}",  # a real signature on another id
    ]


async def test_visitor_ids_are_issued_signed_and_distinct(stack: Stack) -> None:
    first, second = await signed_visitor(stack.client), await signed_visitor(stack.client)
    assert first != second
    assert len(first) == 97 and first[32] == "_"
    status, _ = await _post(stack.client, first, "Olá")
    assert status == 202


async def test_an_id_this_server_did_not_issue_is_refused_everywhere_and_nothing_stored(
    stack: Stack,
) -> None:
    genuine = await signed_visitor(stack.client)
    for forged in _forgeries(genuine):
        status, body = await _post(stack.client, forged, "Olá")
        assert (status, body["error"]) == (403, "invalid_visitor_id"), forged
        status, body = await _read(stack.client, forged)
        assert (status, body["error"]) == (403, "invalid_visitor_id")
        await _refused(await _hello(stack.client, forged), "invalid_visitor_id")
    await stack.stored()
    assert await inbound_rows(stack) == 0


async def test_an_anonymous_thread_is_read_with_its_visitor_id_only(stack: Stack) -> None:
    visitor, stranger = await signed_visitor(stack.client), await signed_visitor(stack.client)
    assert (await _post(stack.client, visitor, "Meu pedido 4471"))[0] == 202
    await stack.idle()
    status, body = await _read(stack.client, visitor)
    assert status == 200
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][0]["text"] == "Meu pedido 4471"
    # Another visitor, genuine id and all, reads nothing of it.
    assert await _read(stack.client, stranger) == (200, {"messages": []})
    socket = await _hello(stack.client, visitor)
    assert (await next_frame(socket))["type"] == "ready"
    assert (await next_frame(socket))["text"] == "Meu pedido 4471"
    await socket.close()


async def test_a_signed_in_accounts_thread_needs_that_accounts_token(stack: Stack) -> None:
    visitor = await signed_visitor(stack.client)
    owner, other = "acct-" + uuid.uuid4().hex[:8], "acct-" + uuid.uuid4().hex[:8]
    status, _ = await _post(stack.client, visitor, "Meu CPF é o de sempre", _bearer(_token(owner)))
    assert status == 202
    await stack.idle()

    status, body = await _read(stack.client, visitor)
    assert (status, body["error"]) == (401, "identity_required")
    forged = _token(owner, secret="another-secret-of-32-bytes-or-more!!")
    cases = [(_token(other), 403, "identity_mismatch"), (forged, 401, "identity_required")]
    for token, expected_status, expected_error in cases:
        status, body = await _read(stack.client, visitor, _bearer(token))
        assert (status, body["error"]) == (expected_status, expected_error)
        assert "CPF" not in str(body)
    status, body = await _read(stack.client, visitor, _bearer(_token(owner)))
    assert status == 200
    assert [m["text"] for m in body["messages"]][0] == "Meu CPF é o de sempre"

    await _refused(await _hello(stack.client, visitor), "identity_required")
    await _refused(await _hello(stack.client, visitor, _token(other)), "identity_mismatch")
    socket = await _hello(stack.client, visitor, _token(owner))
    assert (await next_frame(socket))["type"] == "ready"
    assert (await next_frame(socket))["text"] == "Meu CPF é o de sempre"
    await socket.close()
