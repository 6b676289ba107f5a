"""HTTP model providers built the way the gateway builds them (`make_provider`), for tests that
drive them against scripted vendors."""

from __future__ import annotations

from typing import TypedDict, TypeVar, Unpack

import httpx

from gateway.providers import AnthropicProvider, OpenAICompatProvider, RetryPolicy, make_provider

FAST = RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05)
"""Four attempts with waits of milliseconds, so retries do not slow the tests down."""

OPENAI_KEY = "sk-test-key"
ANTHROPIC_KEY = "sk-ant-test"

P = TypeVar("P")


class CallOptions(TypedDict, total=False):
    """What a test may change in how a provider calls: its retries and its per-call timeout."""

    retry: RetryPolicy
    timeout_s: float


def made_provider(
    spec: str,
    kind: type[P],
    http: httpx.AsyncClient,
    base_url: str,
    *,
    api_key: str,
    retry: RetryPolicy = FAST,
    timeout_s: float = 5.0,
) -> P:
    """``make_provider(spec, …)`` on ``http``, checked to be a ``kind``."""
    made = make_provider(
        spec, http=http, base_url=base_url, api_key=api_key, timeout_s=timeout_s, retry=retry
    )
    assert isinstance(made, kind)
    return made


def openai_provider(
    http: httpx.AsyncClient, base_url: str, **options: Unpack[CallOptions]
) -> OpenAICompatProvider:
    """``openai:gpt-4o-mini`` at ``base_url`` with `OPENAI_KEY`."""
    return made_provider(
        "openai:gpt-4o-mini", OpenAICompatProvider, http, base_url, api_key=OPENAI_KEY, **options
    )


def anthropic_provider(
    http: httpx.AsyncClient, base_url: str, **options: Unpack[CallOptions]
) -> AnthropicProvider:
    """``anthropic:claude-sonnet-4-5`` at ``base_url`` with `ANTHROPIC_KEY`."""
    return made_provider(
        "anthropic:claude-sonnet-4-5",
        AnthropicProvider,
        http,
        base_url,
        api_key=ANTHROPIC_KEY,
        **options,
    )
