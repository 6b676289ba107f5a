"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, LiteLLM.

``POST {base_url}/chat/completions`` with the window's messages as they are. The base URL
includes the API version path, as those servers document it (``https://api.openai.com/v1``,
``http://127.0.0.1:11434/v1``). OpenAI caches long prompt prefixes by itself; the byte-stable
system message is what makes that cache hit, and ``usage.prompt_tokens_details.cached_tokens``
reports it.

Streamed (``on_text`` given): the same body plus ``"stream": true`` and
``"stream_options": {"include_usage": true}``; each event is a chunk whose
``choices[0].delta.content`` adds text, the last chunk before ``data: [DONE]`` carries the usage.
"""

from __future__ import annotations

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
) -> dict[str, object]:
    """The request body: the messages unchanged, in order."""
    if not messages:
        raise ValueError("a chat completion needs at least one message")
    return {
        "model": model,
        "messages": [message.to_dict() for message in messages],
        token_field: max_tokens,
    }


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

    @property
    def complete(self) -> bool:
        return self.done or self.stop is not None

    def usage(self) -> Usage:
        return self._usage

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
        self, messages: Sequence[ChatMessage], *, max_tokens: int, on_text: OnText | None = None
    ) -> Completion:
        payload = openai_payload(
            self.model, messages, max_tokens=max_tokens, token_field=self.token_field
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
