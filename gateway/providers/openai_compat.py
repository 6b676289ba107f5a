"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, LiteLLM.

``POST {base_url}/chat/completions`` with the window's messages as they are. The base URL
includes the API version path, as those servers document it (``https://api.openai.com/v1``,
``http://127.0.0.1:11434/v1``). OpenAI caches long prompt prefixes by itself; the byte-stable
system message is what makes that cache hit, and ``usage.prompt_tokens_details.cached_tokens``
reports it.

Streamed (``on_text`` given): the same body plus ``"stream": true`` and
``"stream_options": {"include_usage": true}``; each event is a chunk whose
``choices[0].delta.content`` adds text, the last chunk before ``data: [DONE]`` carries the usage.

Tools: offered as ``tools`` (``type: "function"``); the model's calls come in
``message.tool_calls`` (streamed: ``delta.tool_calls`` pieces by ``index``, the arguments in
fragments); earlier rounds go back as an assistant message with its ``tool_calls`` followed by
one ``tool`` message per result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal

import httpx
from httpx_sse import ServerSentEvent

from context import ChatMessage
from gateway.providers.base import Completion, OnText, Usage
from gateway.providers.endpoint import call, completion, stream, streamed_completion
from gateway.providers.fields import field_at, tokens_at
from gateway.providers.retry import DEFAULT_RETRY, JsonReply, RetryPolicy, one_line
from gateway.providers.streaming import StreamFault, event_json
from gateway.providers.tool_calls import CallPieces, ToolCall, ToolRound, ToolUse

__all__ = [
    "OPENAI_BASE_URL",
    "OpenAICompatProvider",
    "OpenAIStream",
    "openai_payload",
    "parse_openai_reply",
    "token_field_for",
]

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"

TokenField = Literal["max_tokens", "max_completion_tokens"]

STREAM_FLAGS: Final[Mapping[str, object]] = {
    "stream": True,
    "stream_options": {"include_usage": True},  # else a stream reports no usage at all
}
_DONE: Final = "[DONE]"


def token_field_for(base_url: str) -> TokenField:
    """The name of the output cap: OpenAI's own API takes ``max_completion_tokens`` (its
    reasoning models refuse ``max_tokens``); compatible servers know ``max_tokens``."""
    return "max_completion_tokens" if httpx.URL(base_url).host == "api.openai.com" else "max_tokens"


def openai_payload(
    model: str,
    messages: Sequence[ChatMessage],
    *,
    max_tokens: int,
    token_field: TokenField = "max_tokens",
    tools: ToolUse | None = None,
) -> dict[str, object]:
    """The request body: the messages unchanged, in order, then the turn's rounds of calls."""
    if not messages:
        raise ValueError("a chat completion needs at least one message")
    listed: list[dict[str, object]] = [dict(message.to_dict()) for message in messages]
    payload: dict[str, object] = {"model": model, "messages": listed, token_field: max_tokens}
    if tools is None:
        return payload
    for round_ in tools.rounds:
        listed.extend(_round_messages(round_))
    if tools.definitions:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": definition.name,
                    "description": definition.description,
                    "parameters": definition.parameters,
                },
            }
            for definition in tools.definitions
        ]
        if tools.final:
            payload["tool_choice"] = "none"
    return payload


def _round_messages(round_: ToolRound) -> list[dict[str, object]]:
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json or "{}"},
        }
        for call in round_.calls
    ]
    messages: list[dict[str, object]] = [
        {"role": "assistant", "content": round_.text or None, "tool_calls": calls}
    ]
    for result in round_.results:
        content = json.dumps({"error": result.content}) if result.failed else result.content
        messages.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
    return messages


def _calls(listed: object) -> tuple[ToolCall, ...]:
    """The function calls of a reply's ``tool_calls`` (other kinds are not ours)."""
    if not isinstance(listed, list):
        return ()
    calls: list[ToolCall] = []
    for position, item in enumerate(listed):
        name = field_at(item, "function", "name")
        arguments = field_at(item, "function", "arguments")
        call_id = field_at(item, "id")
        if not isinstance(name, str) or not name:
            continue
        calls.append(
            ToolCall(
                id=call_id if isinstance(call_id, str) and call_id else f"call_{position}",
                name=name,
                arguments_json=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
        )
    return tuple(calls)


def _usage(block: object) -> Usage:
    return Usage(
        prompt_tokens=tokens_at(block, "prompt_tokens") or 0,
        completion_tokens=tokens_at(block, "completion_tokens") or 0,
        cached_tokens=tokens_at(block, "prompt_tokens_details", "cached_tokens") or 0,
    )


def parse_openai_reply(reply: JsonReply, *, requested_model: str) -> Completion:
    """The first choice's text and the usage block; a reply without text is a failure."""
    return completion(
        reply,
        provider=OpenAICompatProvider.name,
        requested_model=requested_model,
        text=reply.field("choices", 0, "message", "content"),
        usage=_usage(reply.field("usage")),
        stop_field="finish_reason",
        stop=reply.field("choices", 0, "finish_reason"),
        tool_calls=_calls(reply.field("choices", 0, "message", "tool_calls")),
    )


class OpenAIStream:
    """One attempt's reading of a chat-completions stream.

    Whole when ``data: [DONE]`` came, or — for servers that end the body without it — once a
    ``finish_reason`` was read. A chunk with an ``error`` object (vLLM, LiteLLM and OpenAI send
    one when generation fails mid-way) fails the attempt as a server error.
    """

    def __init__(self) -> None:
        self.done = False
        self.model: str | None = None
        self.stop: str | None = None
        self._usage = Usage(0, 0)
        self._pieces = CallPieces()

    @property
    def complete(self) -> bool:
        return self.done or self.stop is not None

    def usage(self) -> Usage:
        return self._usage

    def calls(self) -> tuple[ToolCall, ...]:
        return self._pieces.calls()

    def _add_calls(self, deltas: object) -> None:
        if not isinstance(deltas, list):
            return
        for position, delta in enumerate(deltas):
            index = field_at(delta, "index")
            at = index if isinstance(index, int) else position
            call_id, name = field_at(delta, "id"), field_at(delta, "function", "name")
            self._pieces.start(
                at,
                call_id if isinstance(call_id, str) else None,
                name if isinstance(name, str) else None,
            )
            fragment = field_at(delta, "function", "arguments")
            if isinstance(fragment, str) and fragment:
                self._pieces.add_arguments(at, fragment)

    def feed(self, event: ServerSentEvent) -> str:
        if event.data.strip() == _DONE:
            self.done = True
            return ""
        chunk = event_json(event)
        if chunk.get("error") is not None or event.event == "error":
            message = field_at(chunk, "error", "message")
            detail = one_line(message) if isinstance(message, str) else one_line(event.data)
            raise StreamFault("server_error", detail)
        model = chunk.get("model")
        if isinstance(model, str) and model:
            self.model = model
        if isinstance(chunk.get("usage"), Mapping):
            self._usage = _usage(chunk["usage"])
        stop = field_at(chunk, "choices", 0, "finish_reason")
        if isinstance(stop, str) and stop:
            self.stop = stop
        self._add_calls(field_at(chunk, "choices", 0, "delta", "tool_calls"))
        content = field_at(chunk, "choices", 0, "delta", "content")
        return content if isinstance(content, str) else ""


@dataclass(frozen=True, slots=True)
class OpenAICompatProvider:
    """A model behind an OpenAI-compatible endpoint, called on the shared ``http`` client.

    Without ``api_key`` no ``Authorization`` header is sent (local servers need none).
    """

    name: ClassVar[str] = "openai"

    http: httpx.AsyncClient = field(repr=False)
    model: str
    base_url: str = OPENAI_BASE_URL
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    retry: RetryPolicy = DEFAULT_RETRY
    token_field: TokenField = "max_tokens"

    @property
    def url(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_text: OnText | None = None,
        tools: ToolUse | None = None,
    ) -> Completion:
        payload = openai_payload(
            self.model, messages, max_tokens=max_tokens, token_field=self.token_field, tools=tools
        )
        if on_text is None:
            return parse_openai_reply(await call(self, payload), requested_model=self.model)
        reply = await stream(self, {**payload, **STREAM_FLAGS}, OpenAIStream, on_text)
        return await streamed_completion(
            reply,
            provider=self.name,
            requested_model=self.model,
            stop_field="finish_reason",
            parse_whole=lambda whole: parse_openai_reply(whole, requested_model=self.model),
            on_text=on_text,
        )
