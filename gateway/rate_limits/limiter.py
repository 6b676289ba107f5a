"""The one rate limiter of a process: the `limits` library's moving window, on Redis (shared by
every process of the deployment) or in process memory (without Redis).

Each door counts its own subjects (a client address, a visitor, a customer) against the rate
its tenant's `rate_limits` settings give (`gateway.tenants.RateLimitSettings`). A check is one
round trip; a refusal costs one more, to say when the next one will be allowed.

The limiter fails open: when Redis does not answer within a short budget the request is let
through, counted in `relaydesk_rate_limiter_unavailable` and logged once. Refusing every
visitor and customer because a cache is down would do the attacker's work for him, and the
other defences (signed visitor ids, body limits, the login throttle in the database) stay up.
After a failure Redis is skipped for a moment, so a dead server costs one request its budget
rather than every request.

A key names its door and tenant domain and a keyed digest of its subject: Redis never holds a
client address, a visitor id or a customer id (an erased customer leaves nothing there).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import logging
import math
import secrets
import time
from dataclasses import dataclass
from enum import StrEnum

from limits import RateLimitItem
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import MovingWindowRateLimiter
from limits.errors import StorageError
from packaging.version import Version
from redis.asyncio import Redis
from redis.exceptions import RedisError

from gateway.runtime.metrics import Metrics
from gateway.tenants import RateLimitSettings, rate_item

__all__ = ["ALLOWED", "Door", "RateLimiter", "Verdict", "namespace_for", "subject_key_for"]

log = logging.getLogger("relaydesk.rate_limits")

BUDGET_S = 0.5  # a healthy check takes a millisecond; a busy event loop adds to it
BACKOFF_S = 1.0


class Door(StrEnum):
    """What is counted; the value labels `relaydesk_rate_limited`."""

    VISITOR_IDS = "visitor_ids"
    WEBCHAT_MESSAGES = "webchat_messages"
    WEBCHAT_FRAMES = "webchat_frames"
    MODEL_CALLS = "model_calls"
    CONSOLE_LOGINS = "console_logins"
    VERIFICATION_IDENTIFIERS = "verification_identifiers"
    VERIFICATION_CONVERSATIONS = "verification_conversations"

    def rate(self, settings: RateLimitSettings) -> str | None:
        """This door's rate in a tenant's settings (None: no limit)."""
        return getattr(settings, _SETTING[self])  # type: ignore[no-any-return]


_SETTING = {
    Door.VISITOR_IDS: "visitor_ids_per_address",
    Door.WEBCHAT_MESSAGES: "webchat_messages_per_visitor",
    Door.WEBCHAT_FRAMES: "webchat_frames_per_visitor",
    Door.MODEL_CALLS: "model_calls_per_customer",
    Door.CONSOLE_LOGINS: "console_logins_per_address",
    Door.VERIFICATION_IDENTIFIERS: "verification_codes_per_identifier",
    Door.VERIFICATION_CONVERSATIONS: "verification_codes_per_conversation",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """`wait_s`: for a refusal, how long until the window lets one more through."""

    allowed: bool
    wait_s: float = 0.0

    @property
    def retry_after_s(self) -> int:
        """`wait_s` as a `Retry-After` value: whole seconds, at least one."""
        return max(1, math.ceil(self.wait_s))


ALLOWED = Verdict(True)


@functools.lru_cache(maxsize=64)
def _item(rate: str) -> RateLimitItem:
    return rate_item(rate)


def namespace_for(database_url: str) -> str:
    """The deployment's part of every Redis key: the processes of one deployment share its
    database, and deployments (or test runs) sharing a Redis never count each other's clients.
    A digest, so the URL's password never reaches Redis."""
    return hashlib.sha256(database_url.encode()).hexdigest()[:16]


def subject_key_for(database_url: str) -> bytes:
    """The key of the subjects' digests, the same in every process of the deployment."""
    return hmac.new(database_url.encode(), b"relaydesk rate limit subjects", "sha256").digest()


class _RedispyStorage(RedisStorage):
    """`RedisStorage` importing only redis-py: the base class imports every client it could
    use (coredis, valkey) when built, which costs a process start about half a second."""

    DEPENDENCIES = {"redis": Version("5.2.0")}


class RateLimiter:
    def __init__(
        self,
        storage: Storage,
        metrics: Metrics,
        *,
        subject_key: bytes | None = None,
        budget_s: float = BUDGET_S,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        self._window = MovingWindowRateLimiter(storage)
        self._subject_key = subject_key or secrets.token_bytes(32)
        self._metrics = metrics
        self._budget_s = budget_s
        self._backoff_s = backoff_s
        self._skip_until: float | None = None  # set while the storage is unavailable
        for door in Door:  # every door shows in /metrics from the start, at 0
            metrics.rate_limited.labels(door.value)

    @classmethod
    def in_process(cls, metrics: Metrics) -> RateLimiter:
        """Counts kept in this process (one process: the embedded default)."""
        return cls(MemoryStorage(), metrics)

    @classmethod
    def shared(
        cls, redis: Redis, database_url: str, metrics: Metrics, **kwargs: float
    ) -> RateLimiter:
        """Counts kept in Redis, on the process's own client's connections (its timeouts and
        retry), under `relaydesk:rate:<namespace_for(database_url)>`."""
        storage = _RedispyStorage(
            "async+redis://",
            implementation="redispy",
            key_prefix=f"relaydesk:rate:{namespace_for(database_url)}",
            wrap_exceptions=True,
            # The library types its options as plain values; a pool is what it passes on.
            connection_pool=redis.connection_pool,  # type: ignore[arg-type]
        )
        return cls(storage, metrics, subject_key=subject_key_for(database_url), **kwargs)

    async def hit(self, door: Door, rate: str | None, domain: str, subject: str) -> Verdict:
        """Count one use of `door` by `subject` in a tenant `domain` against `rate` (None: no
        limit): allowed, or refused with how long until it would be allowed."""
        if rate is None:
            return ALLOWED
        now = time.monotonic()
        if self._skip_until is not None and now < self._skip_until:
            self._metrics.rate_limiter_unavailable.inc()
            return ALLOWED
        item = _item(rate)
        who = hmac.new(self._subject_key, subject.encode(), "sha256").hexdigest()[:32]
        try:
            async with asyncio.timeout(self._budget_s):
                if await self._window.hit(item, door.value, domain, who):
                    self._recovered()
                    return ALLOWED
                stats = await self._window.get_window_stats(item, door.value, domain, who)
        except (StorageError, RedisError, OSError, TimeoutError) as exc:
            self._unavailable(exc)
            return ALLOWED
        self._recovered()
        self._metrics.rate_limited.labels(door.value).inc()
        return Verdict(False, max(0.0, stats.reset_time - time.time()))

    def _unavailable(self, exc: BaseException) -> None:
        self._metrics.rate_limiter_unavailable.inc()
        if self._skip_until is None:
            log.warning(
                "rate limiter unavailable, requests let through unchecked",
                extra={"fields": {"error": type(exc).__name__}},
            )
        self._skip_until = time.monotonic() + self._backoff_s

    def _recovered(self) -> None:
        if self._skip_until is not None:
            log.info("rate limiter available again")
            self._skip_until = None
