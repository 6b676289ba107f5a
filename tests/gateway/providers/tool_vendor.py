"""Vendor replies that call tools, as OpenAI and Anthropic send them (whole and streamed)."""

from __future__ import annotations

import json

from tests.gateway.providers.vendor import anthropic_reply, openai_reply, sse

ORDER_ARGUMENTS = {"order_id": "4471"}


def openai_tool_reply(*, text: str | None = None) -> dict[str, object]:
    reply = openai_reply()
    choice: dict[str, object] = {"index": 0, "logprobs": None, "finish_reason": "tool_calls"}
    choice["message"] = {
        "role": "assistant",
        "content": text,
        "refusal": None,
        "tool_calls": [
            {
                "id": "call_Aa1",
                "type": "function",
                "function": {"name": "order_status", "arguments": json.dumps(ORDER_ARGUMENTS)},
            },
            {
                "id": "call_Bb2",
                "type": "function",
                "function": {"name": "opening_hours", "arguments": "{}"},
            },
        ],
    }
    reply["choices"] = [choice]
    return reply


def openai_tool_stream() -> list[str]:
    """Two calls, the first one's arguments in three fragments, as OpenAI streams them."""

    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        return sse(
            {
                "id": "chatcmpl-9",
                "object": "chat.completion.chunk",
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    def call(index: int, **piece: object) -> dict[str, object]:
        return {"tool_calls": [{"index": index, **piece}]}

    return [
        chunk({"role": "assistant", "content": None}),
        chunk(
            call(
                0,
                id="call_Aa1",
                type="function",
                function={"name": "order_status", "arguments": ""},
            )
        ),
        chunk(call(0, function={"arguments": '{"order'})),
        chunk(call(0, function={"arguments": '_id": "44'})),
        chunk(call(0, function={"arguments": '71"}'})),
        chunk(
            call(
                1,
                id="call_Bb2",
                type="function",
                function={"name": "opening_hours", "arguments": "{}"},
            )
        ),
        chunk({}, "tool_calls"),
        sse(
            {
                "id": "chatcmpl-9",
                "object": "chat.completion.chunk",
                "choices": [],
                "usage": {"prompt_tokens": 900, "completion_tokens": 31, "total_tokens": 931},
            }
        ),
        sse("[DONE]"),
    ]


def anthropic_tool_reply() -> dict[str, object]:
    reply = anthropic_reply()
    reply["content"] = [
        {"type": "text", "text": "Vou verificar o pedido."},
        {
            "type": "tool_use",
            "id": "toolu_01A",
            "name": "order_status",
            "input": ORDER_ARGUMENTS,
        },
    ]
    reply["stop_reason"] = "tool_use"
    return reply


def anthropic_tool_stream() -> list[str]:
    """A text block, then a tool_use block whose input arrives as JSON fragments."""

    def event(kind: str, **fields: object) -> str:
        return sse({"type": kind, **fields}, kind)

    message = anthropic_reply("")
    message.update(content=[], stop_reason=None)
    return [
        event("message_start", message=message),
        event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Vou ver."}),
        event("content_block_stop", index=0),
        event(
            "content_block_start",
            index=1,
            content_block={
                "type": "tool_use",
                "id": "toolu_01A",
                "name": "order_status",
                "input": {},
            },
        ),
        event(
            "content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": ""}
        ),
        event(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '{"order_id": '},
        ),
        event(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '"4471"}'},
        ),
        event("content_block_stop", index=1),
        event(
            "message_delta",
            delta={"stop_reason": "tool_use", "stop_sequence": None},
            usage={"output_tokens": 40},
        ),
        event("message_stop"),
    ]
