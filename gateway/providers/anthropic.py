"""Anthropic Messages: ``POST {base_url}/v1/messages``.

The window's system message becomes the top-level ``system`` as content blocks; the first block
(the stable prefix: instruction, state, facts, summaries — byte-identical between turns while
its content does not change) carries ``cache_control: {"type": "ephemeral"}`` so repeated turns
read it from the prompt cache. The remaining messages must alternate user/assistant and start
with a user message, so consecutive same-role messages are merged and a leading assistant
message gets a short user message before it.

Anthropic's ``input_tokens`` excludes cached input; `Usage.prompt_tokens` adds the cache reads
and cache writes back so that it is the whole prompt, as for OpenAI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Final

import httpx

from context import ChatMessage
from gateway.providers.base import Completion, Usage
from gateway.providers.endpoint import call, completion
from gateway.providers.retry import DEFAULT_RETRY, JsonReply, RetryPolicy

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "LEADING_USER_TEXT",
    "AnthropicProvider",
    "anthropic_payload",
    "parse_anthropic_reply",
]

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
ANTHROPIC_VERSION: Final = "2023-06-01"
LEADING_USER_TEXT: Final = "(continuing an earlier conversation)"
"""Put before a history that starts with an assistant turn (the API requires a user turn first)."""

_MERGE_SEPARATOR: Final = "\n\n"


def _system_blocks(texts: Sequence[str]) -> list[dict[str, object]]:
    blocks: list[dict[str, object]] = []
    for index, text in enumerate(texts):
        block: dict[str, object] = {"type": "text", "text": text}
        if index == 0:
            block["cache_control"] = {"type": "ephemeral"}
        blocks.append(block)
    return blocks


def anthropic_payload(
    model: str, messages: Sequence[ChatMessage], *, max_tokens: int
) -> dict[str, object]:
    """The request body for a window.

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
    payload["messages"] = turns
    return payload


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
    cache_read = reply.tokens("usage", "cache_read_input_tokens")
    cache_write = reply.tokens("usage", "cache_creation_input_tokens")
    return completion(
        reply,
        provider=AnthropicProvider.name,
        requested_model=requested_model,
        text="".join(parts),
        usage=Usage(
            prompt_tokens=reply.tokens("usage", "input_tokens") + cache_read + cache_write,
            completion_tokens=reply.tokens("usage", "output_tokens"),
            cached_tokens=cache_read,
        ),
        stop_field="stop_reason",
        stop=reply.field("stop_reason"),
    )


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

    async def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int) -> Completion:
        reply = await call(self, anthropic_payload(self.model, messages, max_tokens=max_tokens))
        return parse_anthropic_reply(reply, requested_model=self.model)
