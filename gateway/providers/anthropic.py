"""Anthropic Messages: ``POST {base_url}/v1/messages``.

The window's system message becomes the top-level ``system`` as content blocks; the first block
(the stable prefix: instruction, state, facts, summaries — byte-identical between turns while
its content does not change) carries ``cache_control: {"type": "ephemeral"}`` so repeated turns
read it from the prompt cache. The remaining messages must alternate user/assistant and start
with a user message, so consecutive same-role messages are merged and a leading assistant
message gets a short user message before it.

Anthropic's ``input_tokens`` excludes cached input; `Usage.prompt_tokens` adds the cache reads
and cache writes back so that it is the whole prompt, as for OpenAI.

Streamed (``on_text`` given): the same body plus ``"stream": true``. ``message_start`` carries
the model and the input usage, ``content_block_delta`` events of type ``text_delta`` the text,
``message_delta`` the stop reason and the output tokens, ``message_stop`` ends the reply;
``ping`` and event types added later are skipped, an ``error`` event fails the attempt.

Tools: offered as ``tools`` (``input_schema``); the model's calls are ``tool_use`` content
blocks (streamed: a ``content_block_start`` naming the call, then ``input_json_delta``
fragments of its input); earlier rounds go back as an assistant message of ``tool_use`` blocks
and a user message of ``tool_result`` blocks (``is_error`` for a failed call).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

import httpx
from httpx_sse import ServerSentEvent

from context import ChatMessage
from gateway.providers.base import Completion, FailureReason, OnText, Usage
from gateway.providers.endpoint import call, completion, stream, streamed_completion
from gateway.providers.fields import field_at, tokens_at
from gateway.providers.retry import DEFAULT_RETRY, JsonReply, RetryPolicy, one_line
from gateway.providers.streaming import StreamFault, event_json
from gateway.providers.tool_calls import CallPieces, ToolCall, ToolRound, ToolUse

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "LEADING_USER_TEXT",
    "AnthropicProvider",
    "AnthropicStream",
    "anthropic_payload",
    "parse_anthropic_reply",
]

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
ANTHROPIC_VERSION: Final = "2023-06-01"
LEADING_USER_TEXT: Final = "(continuing an earlier conversation)"
"""Put before a history that starts with an assistant turn (the API requires a user turn first)."""

_MERGE_SEPARATOR: Final = "\n\n"
_USAGE_FIELDS: Final = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)
# What an `error` event's type means (the same types as the HTTP errors); others are retried.
_STREAM_ERRORS: Final[Mapping[str, tuple[FailureReason, bool]]] = {
    "overloaded_error": ("server_error", True),
    "api_error": ("server_error", True),
    "rate_limit_error": ("rate_limited", True),
    "invalid_request_error": ("client_error", False),
    "authentication_error": ("client_error", False),
    "permission_error": ("client_error", False),
    "not_found_error": ("client_error", False),
    "request_too_large": ("client_error", False),
}


def _system_blocks(texts: Sequence[str]) -> list[dict[str, object]]:
    blocks: list[dict[str, object]] = []
    for index, text in enumerate(texts):
        block: dict[str, object] = {"type": "text", "text": text}
        if index == 0:
            block["cache_control"] = {"type": "ephemeral"}
        blocks.append(block)
    return blocks


def anthropic_payload(
    model: str, messages: Sequence[ChatMessage], *, max_tokens: int, tools: ToolUse | None = None
) -> dict[str, object]:
    """The request body for a window, then the turn's rounds of calls.

    System messages go to ``system`` in order (the first one cached); empty messages are left
    out (the API refuses empty text); consecutive same-role turns are joined by a blank line.
    """
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for message in messages:
        if not message.content.strip():
            continue
        if message.role == "system":
            system.append(message.content)
        elif turns and turns[-1]["role"] == message.role:
            turns[-1]["content"] += _MERGE_SEPARATOR + message.content
        else:
            turns.append({"role": message.role, "content": message.content})
    if not turns:
        raise ValueError("an Anthropic request needs at least one user or assistant message")
    if turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": LEADING_USER_TEXT})
    payload: dict[str, object] = {"model": model, "max_tokens": max_tokens}
    if system:
        payload["system"] = _system_blocks(system)
    listed: list[dict[str, object]] = [dict(turn) for turn in turns]
    payload["messages"] = listed
    if tools is not None:
        for round_ in tools.rounds:
            listed.extend(_round_messages(round_))
        if tools.definitions:
            payload["tools"] = [
                {
                    "name": definition.name,
                    "description": definition.description,
                    "input_schema": definition.parameters,
                }
                for definition in tools.definitions
            ]
            if tools.final:
                payload["tool_choice"] = {"type": "none"}
    return payload


def _round_messages(round_: ToolRound) -> list[dict[str, object]]:
    asked: list[dict[str, object]] = []
    if round_.text.strip():
        asked.append({"type": "text", "text": round_.text})
    for asked_call in round_.calls:
        asked.append(
            {
                "type": "tool_use",
                "id": asked_call.id,
                "name": asked_call.name,
                "input": asked_call.arguments_object(),
            }
        )
    answered: list[dict[str, object]] = [
        {
            "type": "tool_result",
            "tool_use_id": result.call_id,
            "content": result.content,
            "is_error": result.failed,
        }
        for result in round_.results
    ]
    return [{"role": "assistant", "content": asked}, {"role": "user", "content": answered}]


def _calls(content: object) -> tuple[ToolCall, ...]:
    if not isinstance(content, list):
        return ()
    calls: list[ToolCall] = []
    for position, item in enumerate(content):
        if field_at(item, "type") != "tool_use":
            continue
        name, call_id = field_at(item, "name"), field_at(item, "id")
        if not isinstance(name, str) or not name:
            continue
        calls.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) and call_id else f"toolu_{position}",
                name=name,
                arguments_json=json.dumps(field_at(item, "input") or {}),
            )
        )
    return tuple(calls)


def parse_anthropic_reply(reply: JsonReply, *, requested_model: str) -> Completion:
    """The text blocks of the reply joined, and the usage block."""
    content = reply.field("content")
    parts: list[str] = []
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                text = item.get("text")
                if isinstance(text, str):
                    parts.append(text)
    return completion(
        reply,
        provider=AnthropicProvider.name,
        requested_model=requested_model,
        text="".join(parts),
        usage=_usage({name: reply.tokens("usage", name) for name in _USAGE_FIELDS}),
        stop_field="stop_reason",
        stop=reply.field("stop_reason"),
        tool_calls=_calls(content),
    )


def _usage(counts: Mapping[str, int]) -> Usage:
    cache_read = counts.get("cache_read_input_tokens", 0)
    cache_write = counts.get("cache_creation_input_tokens", 0)
    return Usage(
        prompt_tokens=counts.get("input_tokens", 0) + cache_read + cache_write,
        completion_tokens=counts.get("output_tokens", 0),
        cached_tokens=cache_read,
    )


class AnthropicStream:
    """One attempt's reading of a Messages stream; whole once ``message_stop`` came."""

    def __init__(self) -> None:
        self.done = False
        self.model: str | None = None
        self.stop: str | None = None
        self._counts: dict[str, int] = {}
        self._pieces = CallPieces()

    @property
    def complete(self) -> bool:
        return self.done

    def usage(self) -> Usage:
        return _usage(self._counts)

    def calls(self) -> tuple[ToolCall, ...]:
        return self._pieces.calls()

    def _add_call(self, kind: object, index: object, piece: object) -> None:
        """A ``tool_use`` block's start, or a fragment of its input."""
        if not isinstance(index, int):
            return
        if kind == "content_block_start" and field_at(piece, "type") == "tool_use":
            call_id, name = field_at(piece, "id"), field_at(piece, "name")
            self._pieces.start(
                index,
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
            )
        fragment = field_at(piece, "partial_json")
        if field_at(piece, "type") == "input_json_delta" and isinstance(fragment, str):
            self._pieces.add_arguments(index, fragment)

    def _count(self, usage: object) -> None:
        """Counts in ``message_delta`` are running totals, so a later one replaces an earlier."""
        for name in _USAGE_FIELDS:
            value = tokens_at(usage, name)
            if value is not None:
                self._counts[name] = value

    def feed(self, event: ServerSentEvent) -> str:
        data = event_json(event)
        kind = data.get("type", event.event)
        if kind == "message_start":
            model = field_at(data, "message", "model")
            self.model = model if isinstance(model, str) and model else None
            self._count(field_at(data, "message", "usage"))
        elif kind in ("content_block_start", "content_block_delta"):
            piece = field_at(data, "content_block" if kind == "content_block_start" else "delta")
            self._add_call(kind, data.get("index"), piece)
            text = field_at(piece, "text")
            if field_at(piece, "type") in ("text", "text_delta") and isinstance(text, str):
                return text
        elif kind == "message_delta":
            stop = field_at(data, "delta", "stop_reason")
            if isinstance(stop, str) and stop:
                self.stop = stop
            self._count(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            error_type = field_at(data, "error", "type")
            message = field_at(data, "error", "message")
            reason, retryable = _STREAM_ERRORS.get(
                error_type if isinstance(error_type, str) else "", ("stream_broken", True)
            )
            detail = one_line(message) if isinstance(message, str) else one_line(event.data)
            raise StreamFault(reason, detail, retryable=retryable)
        return ""


@dataclass(frozen=True, slots=True)
class AnthropicProvider:
    """A Claude model behind the Messages API, called on the shared ``http`` client.

    ``base_url`` is the host part (``https://api.anthropic.com``); a trailing ``/v1`` is
    tolerated. Without ``api_key`` no ``x-api-key`` header is sent (a local proxy may add it).
    """

    name: ClassVar[str] = "anthropic"

    http: httpx.AsyncClient = field(repr=False)
    model: str
    base_url: str = ANTHROPIC_BASE_URL
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    retry: RetryPolicy = DEFAULT_RETRY

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        base = base.removesuffix("/v1")
        return f"{base}/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_text: OnText | None = None,
        tools: ToolUse | None = None,
    ) -> Completion:
        payload = anthropic_payload(self.model, messages, max_tokens=max_tokens, tools=tools)
        if on_text is None:
            return parse_anthropic_reply(await call(self, payload), requested_model=self.model)
        reply = await stream(self, {**payload, "stream": True}, AnthropicStream, on_text)
        return await streamed_completion(
            reply,
            provider=self.name,
            requested_model=self.model,
            stop_field="stop_reason",
            parse_whole=lambda whole: parse_anthropic_reply(whole, requested_model=self.model),
            on_text=on_text,
        )
