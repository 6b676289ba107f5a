"""Retry policy, the retry loop every HTTP provider call goes through, and the JSON POST.

Retried: 429, 500–599, timeouts (`httpx.TimeoutException` or the per-call deadline) and
connection failures (`httpx.ConnectError`). Anything else fails at once: another 4xx means the
request or the key is wrong and sending it again cannot help. Backoff is exponential with full
jitter; a ``Retry-After`` header on 429/503 is honoured instead, capped at ``max_delay_s``.
Attempt counters live in the call, never on a shared instance. `with_retries` is the loop;
`post_json` (here) and `post_stream` (``streaming.py``) are its two kinds of attempt, both of
one `ProviderRequest`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final, TypeVar

import httpx

from gateway.providers.base import FailureReason, ProviderError
from gateway.providers.fields import field_at, tokens_at
from gateway.providers.limits import report_retry_after

__all__ = [
    "DEFAULT_RETRY",
    "JsonReply",
    "ProviderRequest",
    "RetryPolicy",
    "RetryableFailure",
    "Target",
    "backoff_delay",
    "one_line",
    "parse_retry_after",
    "post_json",
    "raise_for_status",
    "request_failure",
    "with_retries",
]

log = logging.getLogger("relaydesk.providers")

_DETAIL_CHARS = 300
_RETRY_AFTER_STATUSES = frozenset({429, 503})

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` HTTP calls at most (1 = no retry); waits between them grow from
    ``base_delay_s`` and never exceed ``max_delay_s``."""

    attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("RetryPolicy.attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < self.base_delay_s:
            raise ValueError("RetryPolicy needs 0 <= base_delay_s <= max_delay_s")


DEFAULT_RETRY: Final = RetryPolicy()


def backoff_delay(
    policy: RetryPolicy,
    retry: int,
    *,
    retry_after: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first retry).

    Full jitter: uniform in ``[0, min(max_delay_s, base_delay_s * 2**(retry-1))]``, so
    concurrent callers that failed together do not come back together. A server's
    ``retry_after`` replaces the jitter, capped at ``max_delay_s``.
    """
    if retry_after is not None:
        return min(max(retry_after, 0.0), policy.max_delay_s)
    ceiling = min(policy.max_delay_s, policy.base_delay_s * 2.0 ** min(max(retry - 1, 0), 60))
    return rand() * ceiling


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


@dataclass(frozen=True, slots=True)
class JsonReply:
    """A 2xx answer whose body is a JSON object, and how many calls it took."""

    body: Mapping[str, object]
    attempts: int

    def field(self, *path: str | int) -> object:
        """The value at ``path`` (keys of objects, indexes of arrays); None where it is absent."""
        return field_at(self.body, *path)

    def tokens(self, *path: str | int) -> int:
        """A token count at ``path``; 0 when absent, null or not a non-negative integer."""
        return tokens_at(self.body, *path) or 0


def one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"


def _error_detail(response: httpx.Response) -> str:
    """The vendor's error message (both protocols use ``{"error": {"message": …}}``)."""
    try:
        body: object = response.json()
    except ValueError:
        return one_line(response.text)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return one_line(error["message"])
        if isinstance(error, str):
            return one_line(error)
    return one_line(response.text)


def _status_reason(status: int) -> tuple[FailureReason, bool]:
    """The failure reason of a non-2xx status, and whether it is worth another attempt."""
    if status == 429:
        return "rate_limited", True
    if 500 <= status <= 599:
        return "server_error", True
    if 400 <= status <= 499:
        return "client_error", False
    return "invalid_response", False


@dataclass(frozen=True, slots=True)
class Target:
    """The provider and model a call is for: the names every `ProviderError` carries."""

    provider: str
    model: str

    def failure(
        self, reason: FailureReason, attempt: int, status: int | None = None, detail: str = ""
    ) -> ProviderError:
        return ProviderError(
            provider=self.provider,
            model=self.model,
            reason=reason,
            attempts=attempt,
            status=status,
            detail=detail,
        )


class RetryableFailure(Exception):
    """One attempt failed in a way the next attempt may not; ``error`` is what the caller gets
    if it was the last one, ``retry_after`` the server's wait in seconds when it named one."""

    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def raise_for_status(response: httpx.Response, target: Target, attempt: int) -> None:
    """Nothing for a 2xx; else the failure its status means (the body must have been read)."""
    status = response.status_code
    if 200 <= status <= 299:
        return
    reason, retryable = _status_reason(status)
    error = target.failure(reason, attempt, status, _error_detail(response))
    if not retryable:
        raise error
    retry_after = None
    if status in _RETRY_AFTER_STATUSES:
        retry_after = parse_retry_after(response.headers.get("retry-after"))
    raise RetryableFailure(error, retry_after)


def request_failure(
    exc: Exception, target: Target, attempt: int, *, timeout_s: float
) -> RetryableFailure | ProviderError:
    """What an httpx exception (or the per-attempt deadline) before any answer means: timeouts
    and refused connections are worth another attempt, other transport failures are final."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        error = target.failure("timeout", attempt, None, f"no answer within {timeout_s:g} s")
    elif isinstance(exc, httpx.ConnectError):
        detail = one_line(str(exc)) or "connect error"
        error = target.failure("connect_error", attempt, None, detail)
    else:
        detail = one_line(str(exc)) or type(exc).__name__
        error = target.failure("transport_error", attempt, None, detail)
    error.__cause__ = exc
    return error if error.reason == "transport_error" else RetryableFailure(error)


async def with_retries(
    attempt: Callable[[int], Awaitable[T]], *, policy: RetryPolicy, target: Target
) -> T:
    """``attempt(1)``, ``attempt(2)``, … until one returns, raises `ProviderError` (final) or
    the policy's attempts are used up; a `RetryableFailure` waits its backoff first."""
    for number in range(1, policy.attempts + 1):
        try:
            return await attempt(number)
        except RetryableFailure as failed:
            retry = failed
        if retry.retry_after is not None:
            report_retry_after(retry.retry_after)  # other calls to this provider wait too
        # Raised outside the handler so the error's cause stays the httpx exception.
        if number == policy.attempts:
            raise retry.error
        delay = backoff_delay(policy, number, retry_after=retry.retry_after)
        log.warning(
            "model call failed, retrying",
            extra={
                "fields": {
                    "provider": target.provider,
                    "model": target.model,
                    "attempt": number,
                    "reason": retry.error.reason,
                    "status": retry.error.status,
                    "delay_s": round(delay, 3),
                }
            },
        )
        await asyncio.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """One provider call, as each of its attempts sends it: the payload POSTed to ``url`` on the
    shared client with ``headers``, an attempt bounded by ``timeout_s``, retried under
    ``policy``; ``target`` names the provider and model in its errors."""

    http: httpx.AsyncClient
    url: str
    payload: Mapping[str, object]
    headers: Mapping[str, str]
    timeout_s: float
    policy: RetryPolicy
    target: Target


async def post_json(request: ProviderRequest) -> JsonReply:
    """POST the request's payload until it answers 2xx with a JSON object.

    Each attempt is bounded by ``timeout_s`` as a whole (connect, send, wait and read).
    Raises `ProviderError` when the policy's attempts are used up or the failure is final.
    """
    target, timeout_s = request.target, request.timeout_s

    async def attempt(number: int) -> JsonReply:
        try:
            async with asyncio.timeout(timeout_s):
                response = await request.http.post(
                    request.url,
                    json=dict(request.payload),
                    headers=dict(request.headers),
                    timeout=timeout_s,
                )
        except (httpx.TransportError, TimeoutError) as exc:
            raise request_failure(exc, target, number, timeout_s=timeout_s) from exc
        raise_for_status(response, target, number)
        try:
            body: object = response.json()
        except ValueError as exc:
            raise target.failure(
                "invalid_response", number, response.status_code, "the body is not JSON"
            ) from exc
        if not isinstance(body, dict):
            raise target.failure(
                "invalid_response", number, response.status_code, "the body is not an object"
            )
        return JsonReply(body=body, attempts=number)

    return await with_retries(attempt, policy=request.policy, target=target)
