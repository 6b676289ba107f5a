"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp, LiteLLM.

``POST {base_url}/chat/completions`` with the window's messages as they are. The base URL
includes the API version path, as those servers document it (``https://api.openai.com/v1``,
``http://127.0.0.1:11434/v1``). OpenAI caches long prompt prefixes by itself; the byte-stable
system message is what makes that cache hit, and ``usage.prompt_tokens_details.cached_tokens``
reports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal

import httpx

from context import ChatMessage
from gateway.providers.base import Completion, Usage
from gateway.providers.endpoint import call, completion
from gateway.providers.retry import DEFAULT_RETRY, JsonReply, RetryPolicy

__all__ = [
    "OPENAI_BASE_URL",
    "OpenAICompatProvider",
    "openai_payload",
    "parse_openai_reply",
    "token_field_for",
]

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"

TokenField = Literal["max_tokens", "max_completion_tokens"]


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


def parse_openai_reply(reply: JsonReply, *, requested_model: str) -> Completion:
    """The first choice's text and the usage block; a reply without text is a failure."""
    return completion(
        reply,
        provider=OpenAICompatProvider.name,
        requested_model=requested_model,
        text=reply.field("choices", 0, "message", "content"),
        usage=Usage(
            prompt_tokens=reply.tokens("usage", "prompt_tokens"),
            completion_tokens=reply.tokens("usage", "completion_tokens"),
            cached_tokens=reply.tokens("usage", "prompt_tokens_details", "cached_tokens"),
        ),
        stop_field="finish_reason",
        stop=reply.field("choices", 0, "finish_reason"),
    )


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

    async def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int) -> Completion:
        payload = openai_payload(
            self.model, messages, max_tokens=max_tokens, token_field=self.token_field
        )
        return parse_openai_reply(await call(self, payload), requested_model=self.model)
