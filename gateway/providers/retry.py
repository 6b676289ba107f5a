"""Retry policy and the one retrying JSON POST every HTTP provider goes through.

Retried: 429, 500–599, timeouts (`httpx.TimeoutException` or the per-call deadline) and
connection failures (`httpx.ConnectError`). Anything else fails at once: another 4xx means the
request or the key is wrong and sending it again cannot help. Backoff is exponential with full
jitter; a ``Retry-After`` header on 429/503 is honoured instead, capped at ``max_delay_s``.
Attempt counters live in the call, never on a shared instance.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Final

import httpx

from gateway.providers.base import FailureReason, ProviderError

__all__ = [
    "DEFAULT_RETRY",
    "JsonReply",
    "RetryPolicy",
    "backoff_delay",
    "parse_retry_after",
    "post_json",
]

log = logging.getLogger("relaydesk.providers")

_DETAIL_CHARS = 300
_RETRY_AFTER_STATUSES = frozenset({429, 503})


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
        node: object = self.body
        for step in path:
            if isinstance(step, str) and isinstance(node, Mapping):
                node = node.get(step)
            elif (
                isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node)
            ):
                node = node[step]
            else:
                return None
        return node

    def tokens(self, *path: str | int) -> int:
        """A token count at ``path``; 0 when absent, null or not a non-negative integer."""
        value = self.field(*path)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return 0
        return value


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"


def _error_detail(response: httpx.Response) -> str:
    """The vendor's error message (both protocols use ``{"error": {"message": …}}``)."""
    try:
        body: object = response.json()
    except ValueError:
        return _one_line(response.text)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _one_line(error["message"])
        if isinstance(error, str):
            return _one_line(error)
    return _one_line(response.text)


def _status_reason(status: int) -> tuple[FailureReason, bool]:
    """The failure reason of a non-2xx status, and whether it is worth another attempt."""
    if status == 429:
        return "rate_limited", True
    if 500 <= status <= 599:
        return "server_error", True
    if 400 <= status <= 499:
        return "client_error", False
    return "invalid_response", False


async def post_json(
    http: httpx.AsyncClient,
    url: str,
    *,
    payload: Mapping[str, object],
    headers: Mapping[str, str],
    timeout_s: float,
    policy: RetryPolicy,
    provider: str,
    model: str,
) -> JsonReply:
    """POST ``payload`` to ``url`` on the shared client until it answers 2xx with a JSON object.

    Each attempt is bounded by ``timeout_s`` as a whole (connect, send, wait and read).
    Raises `ProviderError` when the policy's attempts are used up or the failure is final.
    """

    def failure(
        reason: FailureReason, attempt: int, status: int | None, detail: str
    ) -> ProviderError:
        return ProviderError(
            provider=provider,
            model=model,
            reason=reason,
            attempts=attempt,
            status=status,
            detail=detail,
        )

    for attempt in range(1, policy.attempts + 1):
        retry_after: float | None = None
        try:
            async with asyncio.timeout(timeout_s):
                response = await http.post(
                    url, json=dict(payload), headers=dict(headers), timeout=timeout_s
                )
        except (httpx.TimeoutException, TimeoutError) as exc:
            error = failure("timeout", attempt, None, f"no answer within {timeout_s:g} s")
            error.__cause__ = exc
        except httpx.ConnectError as exc:
            error = failure("connect_error", attempt, None, _one_line(str(exc)) or "connect error")
            error.__cause__ = exc
        except httpx.TransportError as exc:
            detail = _one_line(str(exc)) or type(exc).__name__
            raise failure("transport_error", attempt, None, detail) from exc
        else:
            status = response.status_code
            if 200 <= status <= 299:
                try:
                    body: object = response.json()
                except ValueError as exc:
                    raise failure(
                        "invalid_response", attempt, status, "the body is not JSON"
                    ) from exc
                if not isinstance(body, dict):
                    raise failure("invalid_response", attempt, status, "the body is not an object")
                return JsonReply(body=body, attempts=attempt)
            reason, retryable = _status_reason(status)
            error = failure(reason, attempt, status, _error_detail(response))
            if not retryable:
                raise error
            if status in _RETRY_AFTER_STATUSES:
                retry_after = parse_retry_after(response.headers.get("retry-after"))
        if attempt == policy.attempts:
            raise error
        delay = backoff_delay(policy, attempt, retry_after=retry_after)
        log.warning(
            "model call failed, retrying",
            extra={
                "fields": {
                    "provider": provider,
                    "model": model,
                    "attempt": attempt,
                    "reason": error.reason,
                    "status": error.status,
                    "delay_s": round(delay, 3),
                }
            },
        )
        await asyncio.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
