"""What fuzzing the gateway found, pinned down one case each: every hostile input gets a 4xx in
the error shape (or an error frame on the websocket), never a 500 or a replay to a stranger."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from tests.support.stack import API_KEY, running_stack
from tests.support.webchat import signed_visitor

AUTH = {"Authorization": f"Bearer {API_KEY}"}
JSON = {"Content-Type": "application/json"}
CAMPAIGN = '{"name": "boas-vindas", "messages": ["Olá"]}'
VISITOR = "v1sitor-0123456789"


@pytest.fixture(params=["embedded", "production"])
async def client(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    async with running_stack(request.param, tmp_path) as stack:
        yield stack.client


async def error_of(response: object) -> tuple[int, str]:
    body = await response.json()  # type: ignore[attr-defined]
    assert set(body) >= {"error", "detail"} and isinstance(body["detail"], str)
    return response.status, body["error"]  # type: ignore[attr-defined]


async def test_a_stored_response_is_not_replayed_without_credentials(client: TestClient) -> None:  # type: ignore[type-arg]
    keyed = {**AUTH, **JSON, "Idempotency-Key": "order-1"}
    created = await client.post("/v1/campaigns", data=CAMPAIGN, headers=keyed)
    assert created.status == 201
    stranger = {**JSON, "Idempotency-Key": "order-1"}
    refused = await client.post("/v1/campaigns", data=CAMPAIGN, headers=stranger)
    assert await error_of(refused) == (401, "unauthorized")
    assert "Idempotent-Replayed" not in refused.headers
    other_body = await client.post("/v1/campaigns", data="{}", headers=stranger)
    assert await error_of(other_body) == (401, "unauthorized")  # not a 422 that leaks the key
    replayed = await client.post("/v1/campaigns", data=CAMPAIGN, headers=keyed)
    assert replayed.headers["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"name": "a\\u0000b", "messages": ["x"]}', "body.name"),
        ('{"name": "a\\ud800", "messages": ["x"]}', "body.name"),
        ('{"name": "ok", "messages": ["x"], "variables": {"k\\u0000": "v"}}', "body.variables"),
    ],
)
async def test_text_no_backend_stores_is_400(client: TestClient, body: str, where: str) -> None:  # type: ignore[type-arg]
    response = await client.post("/v1/campaigns", data=body, headers={**AUTH, **JSON})
    assert await error_of(response) == (400, "invalid_text")
    assert (await response.json())["detail"].startswith(where)


async def test_nul_in_ids_and_queries_is_a_4xx(client: TestClient) -> None:  # type: ignore[type-arg]
    for path, expected in [
        ("/v1/campaigns/a%00b", (404, "not_found")),
        ("/v1/operator/customers/a%00b", (404, "not_found")),
        ("/v1/operator/customers/a%00b/facts", (404, "not_found")),
        ("/v1/operator/customers?q=a%00b", (400, "invalid_query")),
        ("/v1/operator/audit?subject_id=%00", (400, "invalid_query")),
    ]:
        assert await error_of(await client.get(path, headers=AUTH)) == expected, path
    keyed = {**AUTH, **JSON, "Idempotency-Key": "k"}
    rebuild = await client.post(
        "/v1/operator/customers/a%00b/rebuild", data='{"reason": "r"}', headers=keyed
    )
    assert await error_of(rebuild) == (404, "not_found")


async def test_webchat_text_no_backend_stores_is_400(client: TestClient) -> None:  # type: ignore[type-arg]
    for text in ("oi\\u0000", "oi\\ud800"):
        body = f'{{"visitor_id": "{VISITOR}", "text": "{text}", "client_message_id": "m1"}}'
        response = await client.post("/webchat/messages", data=body, headers=JSON)
        assert await error_of(response) == (400, "invalid_payload")


@pytest.mark.parametrize(
    "path",
    [
        "/v1/operator/customers/c/facts/99999999999999999999999/pin",
        "/v1/operator/customers/c/facts/%C2%B2/pin",  # "²": isdigit() but not an int
    ],
)
async def test_a_fact_id_no_row_can_have_is_404(client: TestClient, path: str) -> None:  # type: ignore[type-arg]
    response = await client.post(path, data='{"reason": "r"}', headers={**AUTH, **JSON})
    assert await error_of(response) == (404, "not_found")


async def test_unusable_numbers_are_400(client: TestClient) -> None:  # type: ignore[type-arg]
    cursor = await client.get(f"/webchat/messages?visitor_id={VISITOR}&after=%C2%B2")
    assert await error_of(cursor) == (400, "invalid_cursor")
    huge = await client.get(f"/webchat/messages?visitor_id={VISITOR}&after={'9' * 30}")
    assert await error_of(huge) == (400, "invalid_cursor")
    context = {"channel": "telegram", "external_id": "telegram:²", "message": "oi"}
    refused = await client.post("/v1/context", json=context, headers=AUTH)
    assert await error_of(refused) == (400, "invalid_identity")
    digits = '{"name": "x", "messages": ["x"], "expire_at": ' + "1" * 5000 + "}"
    long_int = await client.post("/v1/campaigns", data=digits, headers={**AUTH, **JSON})
    assert await error_of(long_int) == (400, "malformed_json")


async def test_deeply_nested_bodies_are_400(client: TestClient) -> None:  # type: ignore[type-arg]
    deep = "[" * 100_000 + "]" * 100_000
    api = await client.post("/v1/campaigns", data=deep, headers={**AUTH, **JSON})
    assert await error_of(api) == (400, "malformed_json")
    chat = await client.post("/webchat/messages", data=deep, headers=JSON)
    assert await error_of(chat) == (400, "invalid_payload")


async def test_the_socket_answers_hostile_frames_and_stays_open(client: TestClient) -> None:  # type: ignore[type-arg]
    visitor = await signed_visitor(client)
    async with client.ws_connect("/webchat/ws") as socket:
        for frame in ("[" * 30_000, '{"n": ' + "1" * 5000 + "}"):
            await socket.send_str(frame)
            error = await socket.receive_json(timeout=10)
            assert (error["type"], error["error"]) == ("error", "bad_frame")
        hello = {"type": "hello", "visitor_id": visitor, "identity_token": "\ud800"}
        await socket.send_str(
            '{"type": "hello", "visitor_id": "' + visitor + '", "identity_token": "\\ud800"}'
        )
        error = await socket.receive_json(timeout=10)
        assert error["error"] == "bad_frame" and "identity_token" in error["detail"]
        await socket.send_json({**hello, "identity_token": None})
        assert (await socket.receive_json(timeout=10))["type"] == "ready"


async def raw_post(client: TestClient, path: str, authorization: bytes) -> tuple[int, bytes]:  # type: ignore[type-arg]
    """POST with header bytes that are not UTF-8 (an HTTP client library would refuse them)."""
    body = f'{{"visitor_id": "{VISITOR}", "text": "oi", "client_message_id": "m1"}}'.encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
    writer.write(
        b"POST " + path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
        b"Content-Type: application/json\r\nAuthorization: " + authorization + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


async def test_a_header_token_that_is_not_utf8_is_400(client: TestClient) -> None:  # type: ignore[type-arg]
    status, payload = await raw_post(client, "/webchat/messages", b"Bearer \xff\xfe")
    assert status == 400 and json.loads(payload)["error"] == "invalid_payload"


async def test_an_api_key_that_is_not_utf8_is_401(client: TestClient) -> None:  # type: ignore[type-arg]
    status, payload = await raw_post(client, "/v1/campaigns", b"Bearer \xff\xfe")
    assert status == 401 and json.loads(payload)["error"] == "unauthorized"
