"""`relaydesk bench reply --tool-latency`: the slow model's call of the read action (whole and
streamed, read back by the gateway's own provider), the turn's second call answered in words,
and the local business API checking the gateway's signed assertion."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from context import ChatMessage
from devtools.bench.business_api import IDENTITY_KEY, ORDER_STATUS, OrdersApi, order_status_tool
from devtools.bench.model_server import SlowModel
from devtools.bench.model_tool_calls import NO_REFERENCE
from devtools.bench.reply_load_tools import check_called
from devtools.bench.reply_talk import ReplyBenchError
from gateway.providers.openai_compat import OpenAICompatProvider
from gateway.providers.tool_calls import ToolDefinition, ToolResult, ToolRound, ToolUse
from gateway.tenants import TenantSettings
from gateway.tools.assertion import HEADER, AssertionSigner, IdentityClaims
from identity.levels import LinkLevel

# Serial: its figures are timings against the model's latency.
pytestmark = pytest.mark.serial

LATENCY_S = 0.2
CLOCK_SLACK_S = 0.005
WINDOW = [ChatMessage("system", "be brief"), ChatMessage("user", "[r7] cadê meu pedido?")]
ORDERS = ToolDefinition(
    ORDER_STATUS.name,
    "Where an order is.",
    json.dumps({"type": "object", "properties": {"order_id": {"type": "string"}}}),
)
OTHER = ToolDefinition("store_hours", "When the store opens.", '{"type": "object"}')


async def _noop(text: str) -> None:
    return None


def _provider(http: httpx.AsyncClient, base_url: str) -> OpenAICompatProvider:
    return OpenAICompatProvider(http=http, model="bench-slow", base_url=base_url)


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_turns_first_call_is_one_call_of_the_action_after_the_latency(
    streamed: bool,
) -> None:
    model = SlowModel(LATENCY_S, tool=ORDER_STATUS)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        started = time.perf_counter()
        completion = await _provider(http, base_url).complete(
            WINDOW,
            max_tokens=200,
            on_text=_noop if streamed else None,
            tools=ToolUse(definitions=(OTHER, ORDERS)),
        )
        waited = time.perf_counter() - started
    [call] = completion.tool_calls
    assert call.name == "order_status"
    assert json.loads(call.arguments_json) == {"order_id": "r7"}  # the message's reference
    assert call.id.startswith("call_")
    assert completion.text == ""
    assert completion.finish_reason == "tool_calls"
    assert waited >= LATENCY_S - CLOCK_SLACK_S
    [request] = model.requests
    assert request.streamed is streamed
    assert request.called and request.offered == ("order_status", "store_hours")
    assert request.tool_results == ()
    assert request.first_token_s is not None and request.first_token_s >= LATENCY_S - CLOCK_SLACK_S
    assert (model.calls_made, model.answers_after_results, model.failed_results) == (1, 0, 0)


@pytest.mark.parametrize("streamed", [False, True])
async def test_the_call_carrying_the_result_is_answered_in_words_after_the_latency(
    streamed: bool,
) -> None:
    model = SlowModel(LATENCY_S, tool=ORDER_STATUS, reply_tokens=8)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        provider = _provider(http, base_url)
        on_text = _noop if streamed else None
        first = await provider.complete(
            WINDOW, max_tokens=200, on_text=on_text, tools=ToolUse((ORDERS,))
        )
        result = ToolResult(first.tool_calls[0].id, '{"status": "saiu para entrega"}')
        # As the gateway replays a round: the model's calls, then a `tool` message per call.
        replay = ToolUse((ORDERS,), rounds=(ToolRound(first.tool_calls, (result,)),))
        started = time.perf_counter()
        second = await provider.complete(WINDOW, max_tokens=200, on_text=on_text, tools=replay)
        waited = time.perf_counter() - started
    assert second.tool_calls == ()
    assert second.text.startswith("[r7] Obrigado")
    assert len(second.text.split()) == 8
    assert second.finish_reason == "stop"
    assert waited >= LATENCY_S - CLOCK_SLACK_S
    called, answered = model.requests
    assert called.called and not answered.called
    assert answered.tool_results == ('{"status": "saiu para entrega"}',)
    assert (model.calls_made, model.answers_after_results, model.failed_results) == (1, 1, 0)


async def test_a_failed_result_is_counted_and_still_answered_in_words() -> None:
    model = SlowModel(0.0, tool=ORDER_STATUS)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        provider = _provider(http, base_url)
        first = await provider.complete(WINDOW, max_tokens=200, tools=ToolUse((ORDERS,)))
        failed = ToolResult(first.tool_calls[0].id, "failed: 503", failed=True)
        replay = ToolUse((ORDERS,), rounds=(ToolRound(first.tool_calls, (failed,)),))
        second = await provider.complete(WINDOW, max_tokens=200, tools=replay)
    assert second.text and not second.tool_calls
    assert model.failed_results == 1
    assert model.answers_after_results == 1


@pytest.mark.parametrize(
    ("plan", "tools"),
    [
        (ORDER_STATUS, None),  # nothing offered
        (ORDER_STATUS, ToolUse((OTHER,))),  # another action offered
        (ORDER_STATUS, ToolUse((ORDERS,), final=True)),  # tool_choice "none": words are due
        (None, ToolUse((ORDERS,))),  # a model without the plan never calls
    ],
)
async def test_the_model_answers_in_words_unless_its_action_may_be_called(
    plan: object, tools: ToolUse | None
) -> None:
    model = SlowModel(0.0, tool=ORDER_STATUS if plan is not None else None)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        completion = await _provider(http, base_url).complete(WINDOW, max_tokens=200, tools=tools)
    assert completion.tool_calls == ()
    assert completion.text.startswith("[r7] ")
    assert model.calls_made == 0


async def test_a_message_without_a_reference_looks_up_the_placeholder() -> None:
    model = SlowModel(0.0, tool=ORDER_STATUS)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        completion = await _provider(http, base_url).complete(
            [ChatMessage("user", "oi")], max_tokens=50, tools=ToolUse((ORDERS,))
        )
    assert json.loads(completion.tool_calls[0].arguments_json) == {"order_id": NO_REFERENCE}


def _assertion(audience: str, key: str = IDENTITY_KEY) -> str:
    claims = IdentityClaims("cus_1", LinkLevel.VERIFIED, "whatsapp", "whatsapp:+5511")
    return AssertionSigner(shared_key=key).sign(audience, claims)


async def test_the_api_answers_a_signed_call_after_its_latency_and_counts_it() -> None:
    api = OrdersApi(LATENCY_S)
    async with api.serving() as root, httpx.AsyncClient() as http:
        url = order_status_tool(root, LATENCY_S)["endpoint"]["url"]
        started = time.perf_counter()
        answer = await http.get(
            url, params={"order_id": "r7"}, headers={HEADER: _assertion("order_status")}
        )
        waited = time.perf_counter() - started
        await http.get(url, params={"order_id": "r7"}, headers={HEADER: _assertion("order_status")})
    assert answer.status_code == 200
    assert answer.json()["order_id"] == "r7"
    assert waited >= LATENCY_S - CLOCK_SLACK_S
    assert api.by_order == {"r7": 2} and api.calls == 2
    assert (api.refused, api.in_flight, api.peak_in_flight) == (0, 0, 1)
    assert api.connections == 1  # one client kept its connection alive between the calls
    api.reset()
    assert (api.calls, api.peak_in_flight, api.connections) == (0, 0, 0)


async def test_the_api_counts_the_connections_calls_came_over() -> None:
    api = OrdersApi(0.0)
    headers = {HEADER: _assertion("order_status")}
    async with api.serving() as root:
        for _ in range(3):  # a client per call: a connection each
            async with httpx.AsyncClient() as http:
                answer = await http.get(
                    f"{root}/orders/status", params={"order_id": "a"}, headers=headers
                )
                assert answer.status_code == 200
    assert (api.calls, api.connections) == (3, 3)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {HEADER: _assertion("another_action")},
        {HEADER: _assertion("order_status", key="another-key-of-at-least-32-bytes-long")},
    ],
    ids=["none", "another audience", "another key"],
)
async def test_the_api_refuses_a_call_without_a_valid_assertion_at_once(
    headers: dict[str, str],
) -> None:
    api = OrdersApi(LATENCY_S)
    async with api.serving() as root, httpx.AsyncClient() as http:
        started = time.perf_counter()
        answer = await http.get(f"{root}/orders/status", params={"order_id": "r7"}, headers=headers)
        waited = time.perf_counter() - started
    assert answer.status_code == 401
    assert waited < LATENCY_S
    assert (api.calls, api.refused) == (0, 1)


def test_the_action_setting_is_a_valid_read_tool_for_whatsapp_senders() -> None:
    settings = TenantSettings.model_validate({"tools": [order_status_tool("http://x.test", 0.3)]})
    [tool] = settings.tools
    assert (tool.name, tool.kind, tool.min_link_level) == ("order_status", "read", "verified")
    assert tool.endpoint.method == "GET"
    assert tool.endpoint.timeout_s > 0.3  # the API's latency never times the call out


@pytest.mark.parametrize(
    ("tools", "why"),
    [
        (None, "the model was never offered order_status (offered: nothing)"),
        (ToolUse((OTHER,)), "never offered order_status (offered: ['store_hours'])"),
        (ToolUse((ORDERS,)), "the model called order_status 1 times, the API answered none"),
    ],
)
async def test_a_side_whose_action_never_reached_the_api_fails_saying_why(
    tools: ToolUse | None, why: str
) -> None:
    model = SlowModel(0.0, tool=ORDER_STATUS)
    api = OrdersApi(0.0)
    async with model.serving() as base_url, httpx.AsyncClient() as http:
        await _provider(http, base_url).complete(WINDOW, max_tokens=50, tools=tools)
    with pytest.raises(ReplyBenchError) as raised:
        check_called(api, model, "the warm-up")
    assert "no call of the read action reached the API in the warm-up" in str(raised.value)
    assert why in str(raised.value)


async def test_a_side_whose_action_reached_the_api_passes_the_check() -> None:
    model = SlowModel(0.0, tool=ORDER_STATUS)
    api = OrdersApi(0.0)
    async with api.serving() as root, httpx.AsyncClient() as http:
        answer = await http.get(
            f"{root}/orders/status",
            params={"order_id": "r7"},
            headers={HEADER: _assertion("order_status")},
        )
    assert answer.status_code == 200
    check_called(api, model, "the load")  # no error: one call was answered
