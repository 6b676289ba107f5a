from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient
from sqlalchemy import func, select, update

from gateway.app import create_app
from gateway.http.auth import require_api_key
from gateway.http.idempotency import fingerprint, is_valid_key
from gateway.keys import SESSIONS
from gateway.runtime.clock import utcnow
from gateway.storage.models import IdempotencyKey
from tests.support.app_settings import AUTH, make_settings
from tests.support.stack import running_stack

CAMPAIGN = {"name": "boas-vindas", "messages": ["Olá {nome}"], "variables": {"nome": "Ana"}}


@dataclass
class Probes:
    """Routes added by the tests only: a handler that waits, one that fails once, a stream."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    proceed: asyncio.Event = field(default_factory=asyncio.Event)
    calls: dict[str, int] = field(default_factory=dict)

    def count(self, name: str) -> int:
        self.calls[name] = self.calls.get(name, 0) + 1
        return self.calls[name]

    async def slow(self, request: web.Request) -> web.Response:
        require_api_key(request)
        self.count("slow")
        self.entered.set()
        await self.proceed.wait()
        return web.json_response({"slow": True}, status=201)

    async def flaky(self, request: web.Request) -> web.Response:
        require_api_key(request)
        if self.count("flaky") == 1:
            raise RuntimeError("the first attempt fails")
        return web.json_response({"attempt": self.calls["flaky"]}, status=201)

    async def echo(self, request: web.Request) -> web.Response:
        require_api_key(request)
        return web.json_response({"echo": (await request.read()).decode(), "n": self.count("echo")})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        require_api_key(request)
        self.count("stream")
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"streamed")
        return response


@pytest.fixture
def probes() -> Probes:
    return Probes()


@pytest.fixture
async def client(tmp_path: Path, aiohttp_client: AiohttpClient, probes: Probes) -> TestClient:  # type: ignore[type-arg]
    app = create_app(make_settings(tmp_path, RELAYDESK_MAX_BODY_BYTES=4096))
    app.router.add_post("/v1/probe/slow", probes.slow)
    app.router.add_post("/v1/probe/flaky", probes.flaky)
    app.router.add_post("/v1/probe/echo", probes.echo)
    app.router.add_post("/v1/probe/stream", probes.stream)
    return await aiohttp_client(app)


def keyed(key: str) -> dict[str, str]:
    return {**AUTH, "Idempotency-Key": key}


async def key_rows(client: TestClient) -> list[IdempotencyKey]:  # type: ignore[type-arg]
    async with client.app[SESSIONS]() as session:
        return list(await session.scalars(select(IdempotencyKey).order_by(IdempotencyKey.id)))


async def campaign_count(client: TestClient) -> int:  # type: ignore[type-arg]
    listed = await (await client.get("/v1/campaigns", headers=AUTH)).json()
    return len(listed["campaigns"])


async def test_a_retry_gets_the_stored_response(client: TestClient) -> None:  # type: ignore[type-arg]
    first = await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("order-1"))
    second = await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("order-1"))
    assert first.status == second.status == 201
    assert await first.read() == await second.read()
    assert "Idempotent-Replayed" not in first.headers
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.content_type == "application/json"
    assert await campaign_count(client) == 1
    [row] = await key_rows(client)
    assert (row.key, row.method, row.path) == ("order-1", "POST", "/v1/campaigns")
    assert row.status == "done" and row.response_status == 201
    assert row.locked_until > row.created_at


async def test_the_same_key_with_another_body_is_422(client: TestClient) -> None:  # type: ignore[type-arg]
    assert (await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("k"))).status == 201
    other = await client.post("/v1/campaigns", json={**CAMPAIGN, "name": "x"}, headers=keyed("k"))
    assert other.status == 422
    body = await other.json()
    assert set(body) == {"error", "detail"} and body["error"] == "idempotency_key_reused"
    assert await campaign_count(client) == 1


async def test_keys_are_scoped_by_route(client: TestClient, probes: Probes) -> None:  # type: ignore[type-arg]
    assert (await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("k"))).status == 201
    echoed = await client.post("/v1/probe/echo", data=b"hello", headers=keyed("k"))
    assert echoed.status == 200 and "Idempotent-Replayed" not in echoed.headers
    assert probes.calls["echo"] == 1
    assert len(await key_rows(client)) == 2


async def test_concurrent_requests_with_one_key_create_one_row(client: TestClient) -> None:  # type: ignore[type-arg]
    responses = await asyncio.gather(
        *(client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("burst")) for _ in range(10))
    )
    await assert_one_executed(responses)
    assert await campaign_count(client) == 1


async def assert_one_executed(responses: list[Any]) -> None:
    executed = [r for r in responses if r.status == 201 and "Idempotent-Replayed" not in r.headers]
    assert len(executed) == 1
    original = await executed[0].read()
    for response in responses:
        if response is executed[0]:
            continue
        if response.status == 409:
            assert (await response.json())["error"] == "idempotency_key_in_progress"
        else:
            assert response.status == 201 and response.headers["Idempotent-Replayed"] == "true"
            assert await response.read() == original


async def test_a_retry_while_the_first_runs_is_409(client: TestClient, probes: Probes) -> None:  # type: ignore[type-arg]
    first = asyncio.create_task(client.post("/v1/probe/slow", json={}, headers=keyed("slow")))
    await asyncio.wait_for(probes.entered.wait(), 5)
    retry = await client.post("/v1/probe/slow", json={}, headers=keyed("slow"))
    assert retry.status == 409
    assert (await retry.json())["error"] == "idempotency_key_in_progress"
    probes.proceed.set()
    assert (await first).status == 201
    replayed = await client.post("/v1/probe/slow", json={}, headers=keyed("slow"))
    assert replayed.status == 201 and replayed.headers["Idempotent-Replayed"] == "true"
    assert probes.calls["slow"] == 1


async def test_an_abandoned_claim_is_taken_over(client: TestClient, probes: Probes) -> None:  # type: ignore[type-arg]
    probes.proceed.set()
    now = utcnow()
    async with client.app[SESSIONS].begin() as session:
        session.add(
            IdempotencyKey(
                key="crashed",
                method="POST",
                path="/v1/probe/slow",
                fingerprint="0" * 64,
                status="in_progress",
                created_at=now - timedelta(minutes=10),
                locked_until=now - timedelta(minutes=5),
            )
        )
    # Within the key's 24 hours the fingerprint still has to match.
    reused = await client.post("/v1/probe/slow", data=b"{}", headers=keyed("crashed"))
    assert reused.status == 422
    digest = fingerprint("POST", "/v1/probe/slow", "", b"{}")
    async with client.app[SESSIONS].begin() as session:
        await session.execute(update(IdempotencyKey).values(fingerprint=digest))
    resumed = await client.post("/v1/probe/slow", data=b"{}", headers=keyed("crashed"))
    assert resumed.status == 201 and "Idempotent-Replayed" not in resumed.headers
    [row] = await key_rows(client)
    assert row.status == "done" and row.created_at > now - timedelta(minutes=1)


async def test_an_expired_key_runs_again(client: TestClient) -> None:  # type: ignore[type-arg]
    assert (await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("old"))).status == 201
    async with client.app[SESSIONS].begin() as session:
        await session.execute(
            update(IdempotencyKey).values(created_at=utcnow() - timedelta(hours=25))
        )
    again = await client.post("/v1/campaigns", json={**CAMPAIGN, "name": "y"}, headers=keyed("old"))
    assert again.status == 201 and "Idempotent-Replayed" not in again.headers
    assert await campaign_count(client) == 2
    [row] = await key_rows(client)
    assert row.created_at > utcnow() - timedelta(minutes=1)


async def test_unauthenticated_requests_leave_no_key(client: TestClient) -> None:  # type: ignore[type-arg]
    headers = {"Idempotency-Key": "first-try"}
    denied = await client.post("/v1/campaigns", json=CAMPAIGN, headers=headers)
    assert denied.status == 401 and (await denied.json())["error"] == "unauthorized"
    wrong = {**headers, "Authorization": "Bearer nope"}
    assert (await client.post("/v1/campaigns", json=CAMPAIGN, headers=wrong)).status == 401
    assert await key_rows(client) == []
    created = await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("first-try"))
    assert created.status == 201 and "Idempotent-Replayed" not in created.headers
    assert await campaign_count(client) == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "tab\tinside"])
async def test_an_invalid_key_is_400(client: TestClient, key: str) -> None:  # type: ignore[type-arg]
    response = await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed(key))
    assert response.status == 400
    assert (await response.json())["error"] == "invalid_idempotency_key"
    assert await key_rows(client) == [] and await campaign_count(client) == 0


def test_key_validation() -> None:
    assert is_valid_key("a") and is_valid_key("x" * 255) and is_valid_key("order 42/~!")
    assert not is_valid_key("") and not is_valid_key("x" * 256)
    assert not is_valid_key("chave-ç") and not is_valid_key("new\nline")


async def test_the_header_is_ignored_off_v1_posts(client: TestClient) -> None:  # type: ignore[type-arg]
    listed = await client.get("/v1/campaigns", headers=keyed(""))
    assert listed.status == 200
    missing = await client.post("/v1/nowhere", json={}, headers=keyed("k"))
    assert missing.status == 404
    assert await key_rows(client) == []


async def test_an_oversized_body_is_413_and_leaves_no_key(client: TestClient) -> None:  # type: ignore[type-arg]
    huge = {**CAMPAIGN, "messages": ["x" * 10_000]}
    declared = await client.post("/v1/campaigns", json=huge, headers=keyed("big"))
    assert declared.status == 413

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 1000

    chunked = await client.post("/v1/campaigns", data=chunks(), headers=keyed("big"))
    assert chunked.status == 413
    assert (await chunked.json())["error"] == "payload_too_large"
    assert await key_rows(client) == [] and await campaign_count(client) == 0


async def test_a_failed_request_runs_again(client: TestClient, probes: Probes) -> None:  # type: ignore[type-arg]
    failed = await client.post("/v1/probe/flaky", json={}, headers=keyed("flaky"))
    assert failed.status == 500 and (await failed.json())["error"] == "internal_error"
    assert await key_rows(client) == []
    retried = await client.post("/v1/probe/flaky", json={}, headers=keyed("flaky"))
    assert retried.status == 201 and await retried.json() == {"attempt": 2}
    replayed = await client.post("/v1/probe/flaky", json={}, headers=keyed("flaky"))
    assert await replayed.json() == {"attempt": 2} and probes.calls["flaky"] == 2


async def test_a_streamed_response_is_not_stored(client: TestClient, probes: Probes) -> None:  # type: ignore[type-arg]
    for _ in range(2):
        response = await client.post("/v1/probe/stream", data=b"", headers=keyed("stream"))
        assert response.status == 200 and await response.read() == b"streamed"
    assert probes.calls["stream"] == 2
    assert await key_rows(client) == []


async def test_openapi_documents_the_header_on_v1_posts(client: TestClient) -> None:  # type: ignore[type-arg]
    spec = await (await client.get("/openapi.json")).json()
    create = spec["paths"]["/v1/campaigns"]["post"]
    assert {"name": "Idempotency-Key", "in": "header"}.items() <= create["parameters"][0].items()
    assert "409" in create["responses"] and "422" in create["responses"]
    assert "parameters" not in spec["paths"]["/v1/campaigns"]["get"]
    split = spec["paths"]["/v1/operator/customers/{customer_id}/split"]["post"]
    assert [p["name"] for p in split["parameters"]] == ["customer_id", "Idempotency-Key"]


async def test_idempotency_on_postgresql(tmp_path: Path) -> None:
    async with running_stack("production", tmp_path) as stack:
        client = stack.client
        responses = await asyncio.gather(
            *(client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("pg")) for _ in range(10))
        )
        await assert_one_executed(responses)
        replayed = await client.post("/v1/campaigns", json=CAMPAIGN, headers=keyed("pg"))
        assert replayed.headers["Idempotent-Replayed"] == "true"
        renamed = {**CAMPAIGN, "name": "z"}
        other = await client.post("/v1/campaigns", json=renamed, headers=keyed("pg"))
        assert other.status == 422
        assert (await other.json())["error"] == "idempotency_key_reused"
        denied = await client.post("/v1/campaigns", json=CAMPAIGN, headers={"Idempotency-Key": "x"})
        assert denied.status == 401
        assert await campaign_count(client) == 1
        async with client.app[SESSIONS]() as session:
            keys = await session.scalar(select(func.count()).select_from(IdempotencyKey))
        assert keys == 1
