"""Backoff arithmetic and Retry-After parsing (pure), and Retry-After honoured on the wire."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context import ChatMessage
from gateway.providers import RetryPolicy, make_provider
from gateway.providers.retry import backoff_delay, parse_retry_after
from tests.gateway.providers.conftest import StartAt
from tests.gateway.providers.vendor import Step, openai_reply

POLICY = RetryPolicy(attempts=6, base_delay_s=0.5, max_delay_s=8.0)


def test_ceiling_doubles_per_retry_up_to_the_cap() -> None:
    top = [backoff_delay(POLICY, retry, rand=lambda: 1.0) for retry in range(1, 8)]
    assert top == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_full_jitter_can_wait_nothing() -> None:
    assert backoff_delay(POLICY, 3, rand=lambda: 0.0) == 0.0
    assert backoff_delay(POLICY, 3, rand=lambda: 0.25) == 0.5


def test_retry_after_replaces_the_jitter_and_is_capped() -> None:
    assert backoff_delay(POLICY, 1, retry_after=0.0, rand=lambda: 1.0) == 0.0
    assert backoff_delay(POLICY, 1, retry_after=3.0) == 3.0
    assert backoff_delay(POLICY, 1, retry_after=120.0) == 8.0


@given(
    attempts=st.integers(1, 10),
    base=st.floats(0, 5, allow_nan=False),
    extra=st.floats(0, 60, allow_nan=False),
    retry=st.integers(1, 200),
    draw=st.floats(0, 1, exclude_max=True),
    retry_after=st.none() | st.floats(-5, 1e6, allow_nan=False),
)
def test_delay_never_exceeds_the_cap(
    attempts: int,
    base: float,
    extra: float,
    retry: int,
    draw: float,
    retry_after: float | None,
) -> None:
    policy = RetryPolicy(attempts, base, base + extra)
    delay = backoff_delay(policy, retry, retry_after=retry_after, rand=lambda: draw)
    assert 0.0 <= delay <= policy.max_delay_s


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("0", 0.0),
        ("7", 7.0),
        ("1.5", 1.5),
        ("-3", 0.0),
        ("soon", None),
        ("inf", None),
        ("Wed, 21 Oct 2026 07:28:30 GMT", 30.0),
        ("Wed, 21 Oct 2026 07:27:00 GMT", 0.0),  # already past
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    now = datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(header, now=now) == seconds


@pytest.mark.parametrize(
    "kwargs",
    [{"attempts": 0}, {"base_delay_s": -1.0}, {"base_delay_s": 2.0, "max_delay_s": 1.0}],
)
def test_policy_refuses_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


async def test_retry_after_from_the_server_is_waited_for(
    http: httpx.AsyncClient, start_openai: StartAt
) -> None:
    vendor, base = await start_openai(
        [Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "0.3"})],
        then=Step(body=openai_reply()),
    )
    model = make_provider(
        "openai:m",
        http=http,
        base_url=base,
        api_key=None,
        retry=RetryPolicy(attempts=2, base_delay_s=0.0, max_delay_s=1.0),
    )

    started = time.monotonic()
    completion = await model.complete([ChatMessage("user", "oi")], max_tokens=5)

    assert time.monotonic() - started >= 0.3  # jitter alone would not have waited (base 0)
    assert completion.attempts == 2 and len(vendor.received) == 2
