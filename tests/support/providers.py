"""HTTP model providers built the way the gateway builds them (`make_provider`), for tests that
drive them against scripted vendors."""

from __future__ import annotations

from typing import TypeVar

import httpx

from gateway.providers import AnthropicProvider, OpenAICompatProvider, RetryPolicy, make_provider

FAST = RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05)
"""Four attempts with waits of milliseconds, so retries do not slow the tests down."""

OPENAI_KEY = "sk-test-key"
ANTHROPIC_KEY = "sk-ant-test"

P = TypeVar("P")


def made_provider(
    spec: str,
    kind: type[P],
    http: httpx.AsyncClient,
    base_url: str,
    *,
    api_key: str,
    retry: RetryPolicy,
    timeout_s: float,
) -> P:
    """``make_provider(spec, …)`` on ``http``, checked to be a ``kind``."""
    made = make_provider(
        spec, http=http, base_url=base_url, api_key=api_key, timeout_s=timeout_s, retry=retry
    )
    assert isinstance(made, kind)
    return made


def openai_provider(
    http: httpx.AsyncClient,
    base_url: str,
    *,
    retry: RetryPolicy = FAST,
    timeout_s: float = 5.0,
    model: str = "gpt-4o-mini",
) -> OpenAICompatProvider:
    """``openai:<model>`` at ``base_url`` with `OPENAI_KEY`."""
    return made_provider(
        f"openai:{model}",
        OpenAICompatProvider,
        http,
        base_url,
        api_key=OPENAI_KEY,
        retry=retry,
        timeout_s=timeout_s,
    )


def anthropic_provider(
    http: httpx.AsyncClient,
    base_url: str,
    *,
    retry: RetryPolicy = FAST,
    timeout_s: float = 5.0,
    model: str = "claude-sonnet-4-5",
) -> AnthropicProvider:
    """``anthropic:<model>`` at ``base_url`` with `ANTHROPIC_KEY`."""
    return made_provider(
        f"anthropic:{model}",
        AnthropicProvider,
        http,
        base_url,
        api_key=ANTHROPIC_KEY,
        retry=retry,
        timeout_s=timeout_s,
    )
