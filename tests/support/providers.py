"""HTTP model providers built the way the gateway builds them (`make_provider`), for tests that
drive them against scripted vendors."""

from __future__ import annotations

from typing import TypeVar

import httpx

from gateway.providers import RetryPolicy, make_provider

FAST = RetryPolicy(attempts=4, base_delay_s=0.01, max_delay_s=0.05)
"""Four attempts with waits of milliseconds, so retries do not slow the tests down."""

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
