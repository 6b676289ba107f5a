"""The runner against a local business API: who the call acts for, what is refused before any
request, what a failure tells the model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import jwt
import pytest
from aiohttp import web

from context import TiktokenCounter, load_encoding
from gateway.providers.tool_calls import ToolCall
from gateway.tenants import effective_settings
from gateway.tools.assertion import AssertionSigner
from gateway.tools.catalog import ActionSpec, catalog_of
from gateway.tools.runner import ActionRunner, Caller
from identity.levels import LinkLevel
from identity.tool_reach import KnownIdentifier
from outbound.fetcher import SafeFetcher
from outbound.policy import FetchPolicy
from tests.gateway.tools.local_api import local_api

KEY = "r" * 40
ANA = Caller(
    customer_id="cus_ana",
    level=LinkLevel.VERIFIED,
    channel="whatsapp",
    conversation="whatsapp:+5511999990000",
    allowed_scopes=frozenset({"public", "profile", "account", "payment"}),
    identifiers=(KnownIdentifier("phone", "+5511999990000", LinkLevel.VERIFIED),),
)
VISITOR = Caller(
    customer_id="cus_visitor",
    level=LinkLevel.ANONYMOUS,
    channel="webchat",
    conversation="webchat:anon-1",
    allowed_scopes=frozenset({"public"}),
)


@dataclass
class Orders:
    seen: list[tuple[dict[str, str], str]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/orders/status", self.status)
        app.router.add_post("/orders/history", self.history)
        app.router.add_post("/pix", self.pix)
        return app

    async def status(self, request: web.Request) -> web.Response:
        self.seen.append((dict(request.headers), await request.text()))
        return web.json_response({"order_id": "4471", "status": "shipped"})

    async def history(self, request: web.Request) -> web.Response:
        self.seen.append((dict(request.headers), await request.text()))
        return web.json_response({"orders": [f"order {n} delivered" for n in range(400)]})

    async def pix(self, request: web.Request) -> web.Response:
        self.seen.append((dict(request.headers), await request.text()))
        return web.json_response({"changed": True})


@pytest.fixture
async def orders() -> AsyncIterator[tuple[Orders, dict[str, ActionSpec], ActionRunner]]:
    api = Orders()
    async with local_api(api.app()) as (root, fetcher):
        yield api, *_actions(root, fetcher)


def _actions(root: str, fetcher: SafeFetcher) -> tuple[dict[str, ActionSpec], ActionRunner]:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    settings = effective_settings(
        [
            {
                "tools": [
                    {
                        "name": "order_status",
                        "description": "Where an order is.",
                        "parameters": {**schema, "required": ["order_id"]},
                        "scopes": ["profile"],
                        "endpoint": {"url": f"{root}/orders/status"},
                    },
                    {
                        "name": "order_history",
                        "description": "Every order.",
                        "endpoint": {"url": f"{root}/orders/history"},
                    },
                    {
                        "name": "change_pix_key",
                        "description": "Change the Pix key.",
                        "kind": "write",
                        "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
                        "endpoint": {"url": f"{root}/pix"},
                    },
                ]
            }
        ]
    )
    catalog = catalog_of(settings.tools)
    counter = TiktokenCounter(load_encoding())
    return dict(catalog.actions), ActionRunner(
        fetcher, AssertionSigner(shared_key=KEY), {}, counter
    )


async def test_the_call_acts_for_the_conversations_customer_whatever_the_model_adds(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    api, offered, runner = orders
    call = ToolCall("call_1", "order_status", '{"order_id": "4471", "customer_id": "cus_bruno"}')

    run = await runner.run(call, offered, ANA, max_result_tokens=200)

    assert run.status == "ok" and json.loads(run.content)["status"] == "shipped"
    assert run.dropped == ("customer_id",)
    [(headers, body)] = api.seen
    assert json.loads(body) == {"order_id": "4471"}
    claims = jwt.decode(
        headers["X-Relaydesk-Identity"], KEY, algorithms=["HS256"], audience="order_status"
    )
    assert claims["sub"] == "cus_ana"
    assert claims["identifiers"] == {"phone": "+5511999990000"}
    assert not run.result.failed


async def test_an_action_above_the_callers_level_is_refused_with_no_request(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    api, offered, runner = orders

    run = await runner.run(
        ToolCall("call_1", "order_status", '{"order_id": "4471"}'),
        offered,
        VISITOR,
        max_result_tokens=200,
    )
    unknown = await runner.run(
        ToolCall("call_2", "delete_account", "{}"), offered, ANA, max_result_tokens=200
    )

    assert run.status == "refused" and "needs a verified identity" in run.content
    assert unknown.status == "refused" and run.result.failed
    assert api.seen == []


async def test_arguments_failing_the_schema_are_told_to_the_model_and_not_sent(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    api, offered, runner = orders

    run = await runner.run(
        ToolCall("call_1", "order_status", '{"order": 4471}'), offered, ANA, max_result_tokens=200
    )

    assert run.status == "invalid"
    assert "'order_id' is a required property" in run.content
    assert api.seen == []


async def test_a_write_waits_for_the_customer_and_sends_nothing(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    api, offered, runner = orders

    run = await runner.run(
        ToolCall("call_1", "change_pix_key", '{"key": "ana@example.org"}'),
        offered,
        ANA,
        max_result_tokens=200,
    )

    assert run.status == "awaiting_confirmation" and run.kind == "write"
    assert run.arguments_json == '{"key":"ana@example.org"}'
    assert api.seen == []


async def test_a_long_result_is_cut_to_the_tenants_tokens(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    _, offered, runner = orders
    counter = TiktokenCounter(load_encoding())

    run = await runner.run(
        ToolCall("call_1", "order_history", "{}"), offered, ANA, max_result_tokens=50
    )

    assert run.status == "ok" and run.content.endswith(" […]")
    assert counter.count(run.content.removesuffix(" […]")) <= 50


async def test_without_an_identity_key_nothing_is_called(
    orders: tuple[Orders, dict[str, ActionSpec], ActionRunner],
) -> None:
    api, offered, _ = orders
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    keyless = ActionRunner(fetcher, AssertionSigner(), {}, TiktokenCounter(load_encoding()))
    try:
        run = await keyless.run(
            ToolCall("call_1", "order_status", '{"order_id": "4471"}'),
            offered,
            ANA,
            max_result_tokens=200,
        )
    finally:
        await fetcher.aclose()

    assert run.status == "failed" and "RELAYDESK_TOOL_IDENTITY_KEY" in run.content
    assert api.seen == []
