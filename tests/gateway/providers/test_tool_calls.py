"""Tool calling through both HTTP providers against local servers speaking their protocols:
the actions offered, the calls read back (whole and streamed), earlier rounds replayed."""

from __future__ import annotations

import json

import httpx

from context import Window
from gateway.providers import ToolCall, ToolDefinition, ToolResult, ToolRound, ToolUse
from tests.gateway.providers.conftest import Shown, StartAt
from tests.gateway.providers.tool_vendor import (
    ORDER_ARGUMENTS,
    anthropic_tool_reply,
    anthropic_tool_stream,
    openai_tool_reply,
    openai_tool_stream,
)
from tests.gateway.providers.vendor import Step, anthropic_reply, openai_reply
from tests.support.providers import anthropic_provider, openai_provider

ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}}
OFFER = ToolUse(
    definitions=(
        ToolDefinition("order_status", "Where an order is.", json.dumps(ORDER_SCHEMA)),
        ToolDefinition("opening_hours", "Opening hours.", '{"type": "object"}'),
    )
)
ROUND = ToolRound(
    calls=(ToolCall("call_Aa1", "order_status", json.dumps(ORDER_ARGUMENTS)),),
    results=(ToolResult("call_Aa1", '{"status": "shipped"}'),),
)
FAILED_ROUND = ToolRound(
    calls=(ToolCall("toolu_01A", "order_status", json.dumps(ORDER_ARGUMENTS)),),
    results=(ToolResult("toolu_01A", "the order service did not answer in 10 s", failed=True),),
    text="Vou verificar o pedido.",
)


async def test_openai_offers_the_actions_and_reads_the_calls(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_tool_reply()))

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, tools=OFFER
    )

    assert completion.text == ""
    assert completion.finish_reason == "tool_calls"
    assert completion.tool_calls == (
        ToolCall("call_Aa1", "order_status", '{"order_id": "4471"}'),
        ToolCall("call_Bb2", "opening_hours", "{}"),
    )
    [request] = vendor.received
    assert request.body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "order_status",
            "description": "Where an order is.",
            "parameters": ORDER_SCHEMA,
        },
    }


async def test_openai_replays_a_round_after_the_window(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply("Saiu para entrega.")))

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, tools=ToolUse(OFFER.definitions, (ROUND,), final=True)
    )

    assert completion.text == "Saiu para entrega." and completion.tool_calls == ()
    assert vendor.received[0].body["tool_choice"] == "none"  # the last round: words only
    messages = vendor.received[0].body["messages"]
    assert messages[len(window.messages) - 1]["role"] == "user"
    assert messages[-2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_Aa1",
                "type": "function",
                "function": {"name": "order_status", "arguments": '{"order_id": "4471"}'},
            }
        ],
    }
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_Aa1",
        "content": '{"status": "shipped"}',
    }


async def test_openai_streamed_calls_are_put_together_from_their_pieces(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(events=openai_tool_stream()))
    shown = Shown()

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown, tools=OFFER
    )

    assert completion.tool_calls == (
        ToolCall("call_Aa1", "order_status", '{"order_id": "4471"}'),
        ToolCall("call_Bb2", "opening_hours", "{}"),
    )
    assert json.loads(completion.tool_calls[0].arguments_json) == ORDER_ARGUMENTS
    assert completion.text == "" and shown.texts == []
    assert completion.usage.prompt_tokens == 900


async def test_anthropic_offers_the_actions_and_reads_the_tool_use(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_tool_reply()))

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, tools=OFFER
    )

    assert completion.text == "Vou verificar o pedido."
    assert completion.finish_reason == "tool_use"
    assert completion.tool_calls == (
        ToolCall("toolu_01A", "order_status", json.dumps(ORDER_ARGUMENTS)),
    )
    [request] = vendor.received
    assert request.body["tools"][0] == {
        "name": "order_status",
        "description": "Where an order is.",
        "input_schema": ORDER_SCHEMA,
    }


async def test_anthropic_replays_a_failed_call_as_an_error_result(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply("Não consegui ver.")))

    await anthropic_provider(http, base).complete(
        window.messages,
        max_tokens=800,
        tools=ToolUse(OFFER.definitions, (FAILED_ROUND,), final=True),
    )

    assert vendor.received[0].body["tool_choice"] == {"type": "none"}
    messages = vendor.received[0].body["messages"]
    assert messages[-2] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Vou verificar o pedido."},
            {
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "order_status",
                "input": ORDER_ARGUMENTS,
            },
        ],
    }
    assert messages[-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01A",
                "content": "the order service did not answer in 10 s",
                "is_error": True,
            }
        ],
    }
    # Roles still alternate: the window's last user turn, then assistant, then user.
    assert [message["role"] for message in messages[-3:]] == ["user", "assistant", "user"]


async def test_anthropic_streamed_tool_input_is_put_together(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    _, base = await start_anthropic(then=Step(events=anthropic_tool_stream()))
    shown = Shown()

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown, tools=OFFER
    )

    assert completion.text == "Vou ver." and shown.texts == ["Vou ver."]
    [call] = completion.tool_calls
    assert (call.id, call.name) == ("toolu_01A", "order_status")
    assert json.loads(call.arguments_json) == ORDER_ARGUMENTS
    assert completion.finish_reason == "tool_use"


async def test_without_tools_nothing_about_tools_is_sent(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply()))

    await openai_provider(http, base).complete(window.messages, max_tokens=800)

    assert "tools" not in vendor.received[0].body
    assert "tool_choice" not in vendor.received[0].body
