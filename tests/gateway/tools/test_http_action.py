from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from gateway.tools.arguments import checked_arguments
from gateway.tools.http_action import call_endpoint
from gateway.tools.settings import EndpointSettings
from outbound.fetcher import SafeFetcher
from outbound.policy import FetchPolicy
from tests.gateway.tools.local_api import local_api

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
ARGUMENTS = checked_arguments(SCHEMA, '{"order_id": "4471", "customer_id": "cus_other"}')


@dataclass
class BusinessApi:
    """A local business API that records what reached it."""

    seen: list[tuple[str, dict[str, str], str, dict[str, str]]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/orders/status", self.status)
        app.router.add_post("/broken", self.broken)
        app.router.add_post("/slow", self.slow)
        app.router.add_post("/moved", self.moved)
        return app

    async def status(self, request: web.Request) -> web.Response:
        body = await request.text()
        self.seen.append((request.method, dict(request.headers), body, dict(request.query)))
        return web.json_response({"order_id": "4471", "status": "shipped"})

    async def broken(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, dict(request.headers), "", {}))
        return web.Response(status=500, text="boom")

    async def slow(self, request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.json_response({})

    async def moved(self, request: web.Request) -> web.Response:
        self.seen.append((request.method, dict(request.headers), "", {}))
        raise web.HTTPTemporaryRedirect("/orders/status")


@pytest.fixture
async def api() -> AsyncIterator[tuple[BusinessApi, str, SafeFetcher]]:
    business = BusinessApi()
    async with local_api(business.app()) as (root, fetcher):
        yield business, root, fetcher


async def test_a_post_carries_the_checked_arguments_the_assertion_and_the_secret(
    api: tuple[BusinessApi, str, SafeFetcher],
) -> None:
    business, root, fetcher = api
    endpoint = EndpointSettings(
        url=f"{root}/orders/status", headers_from_env={"Authorization": "SHOP_TOKEN"}
    )

    outcome = await call_endpoint(
        fetcher,
        endpoint,
        ARGUMENTS,
        assertion="header.claims.signature",
        environ={"SHOP_TOKEN": "Bearer s3cret"},
        idempotency_key="turn-1:order_status:0",
    )

    assert outcome.ok and outcome.http_status == 200
    assert json.loads(outcome.body) == {"order_id": "4471", "status": "shipped"}
    [(method, headers, body, _)] = business.seen
    assert method == "POST"
    assert json.loads(body) == {"order_id": "4471"}  # the model's customer_id never left
    assert headers["X-Relaydesk-Identity"] == "header.claims.signature"
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Idempotency-Key"] == "turn-1:order_status:0"


async def test_a_get_sends_the_arguments_as_the_query(
    api: tuple[BusinessApi, str, SafeFetcher],
) -> None:
    business, root, fetcher = api
    endpoint = EndpointSettings(url=f"{root}/orders/status", method="GET")

    outcome = await call_endpoint(fetcher, endpoint, ARGUMENTS, assertion="a", environ={})

    assert outcome.ok
    [(method, _, body, query)] = business.seen
    assert (method, body, query) == ("GET", "", {"order_id": "4471"})


async def test_a_missing_secret_fails_the_call_before_any_request(
    api: tuple[BusinessApi, str, SafeFetcher],
) -> None:
    business, root, fetcher = api
    endpoint = EndpointSettings(
        url=f"{root}/orders/status", headers_from_env={"Authorization": "SHOP_TOKEN"}
    )

    outcome = await call_endpoint(fetcher, endpoint, ARGUMENTS, assertion="a", environ={})

    assert not outcome.ok
    assert outcome.body == "not called: the environment variable SHOP_TOKEN is not set"
    assert business.seen == []


async def test_an_error_a_timeout_and_a_redirect_are_failures(
    api: tuple[BusinessApi, str, SafeFetcher],
) -> None:
    business, root, fetcher = api

    broken = await call_endpoint(
        fetcher, EndpointSettings(url=f"{root}/broken"), ARGUMENTS, assertion="a", environ={}
    )
    slow = await call_endpoint(
        fetcher,
        EndpointSettings(url=f"{root}/slow", timeout_s=0.3),
        ARGUMENTS,
        assertion="a",
        environ={},
    )
    moved = await call_endpoint(
        fetcher, EndpointSettings(url=f"{root}/moved"), ARGUMENTS, assertion="a", environ={}
    )

    assert (broken.status, broken.http_status) == ("failed", 500)
    assert slow.status == "failed" and "did not answer within 0.3 s" in slow.body
    assert slow.latency_ms < 2000
    assert (moved.status, moved.http_status) == ("failed", 307)
    # The redirect was not followed: the status endpoint saw nothing.
    assert [method for method, *_ in business.seen] == ["POST", "POST"]


async def test_an_internal_endpoint_is_refused_by_the_fetcher() -> None:
    fetcher = SafeFetcher(FetchPolicy.allowing([]))
    try:
        outcome = await call_endpoint(
            fetcher,
            EndpointSettings(url="http://127.0.0.1:9/orders"),
            ARGUMENTS,
            assertion="a",
            environ={},
        )
    finally:
        await fetcher.aclose()

    assert outcome.status == "failed" and outcome.body.startswith("refused: ")
