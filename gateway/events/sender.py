"""Sending recorded events to RELAYDESK_EVENTS_URL: signed, retried, at least once.

Runs wherever the app's background work runs (the background process under `serve
--workers N`); several senders (processes, machines) may share one database. Each claims due
events with a lease (`outbound_events.claim_due`: a row is leased by one sender at a time) a
batch at a time, lowest id first, and posts them one after another:

- 2xx: delivered (the row is deleted after `DELIVERED_RETENTION`);
- 408, 429, 5xx, a network error or a timeout: tried again after an exponential backoff with
  jitter (`BASE_DELAY_S` × 2^(attempts−1), at most `MAX_DELAY_S`), or after the receiver's
  `Retry-After`; after `MAX_ATTEMPTS` attempts it is given up;
- any other status (a 4xx: the receiver refuses it): given up at once.
A given-up event is kept with its `last_error` (see `outbound_events` for the states).

Ordering: one sender posts in id order. A failing event does not hold the others: it waits for
its retry while later ones go on. But when the receiver itself seems down (two failures in a
row, or a `Retry-After`) the sender stops and pauses until the failed events are due again, so
once the receiver is back they go first and the order is kept. Several senders post side by
side, and a sender that dies after a post but before recording it leaves the event to be sent
again when its lease runs out: delivery is at least once, and receivers dedupe on the delivery
id (`X-Relaydesk-Delivery`, also the body's `id`).

A recorded event goes out at once when this process committed it (`EventOutbox.wake`), and
within `POLL_S` otherwise. Posts go through the guarded fetcher's client (`outbound`): a
receiver on an internal address is reached only when RELAYDESK_FETCH_ALLOW lists it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Literal

import httpx
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.config import Settings
from gateway.events import signing
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.runtime.outages import is_storage_down
from gateway.runtime.tasks import TaskOwner, cancel_and_wait
from gateway.storage.repositories import outbound_events
from gateway.storage.repositories.outbound_events import ClaimedEvent
from outbound import FetchError

log = logging.getLogger("relaydesk.events")

POLL_S = 1.0
BATCH = 20
LEASE = timedelta(seconds=120)
# One post may take this long in all; a sender posts only while its lease has this much left
# (and a margin), so no other sender takes an event that is being posted.
REQUEST_DEADLINE_S = 15.0
LEASE_MARGIN_S = 5.0
BASE_DELAY_S = 2.0
MAX_DELAY_S = 600.0
MAX_RETRY_AFTER_S = 3600.0
JITTER = 0.2
MAX_ATTEMPTS = 15
# Retryable failures in a row after which the receiver is taken to be down (the sender pauses).
FAILURES_TO_PAUSE = 2
DELIVERED_RETENTION = timedelta(days=7)
GIVEN_UP_RETENTION = timedelta(days=30)
PURGE_EVERY_S = 600.0
PURGE_BATCH = 1000
PENDING_EVERY_S = 5.0
ERROR_BODY_CHARS = 200
RETRYABLE_STATUSES = frozenset({408, 429})


@dataclass(frozen=True, slots=True)
class Outcome:
    result: Literal["delivered", "retry", "refused"]
    error: str | None = None
    retry_after_s: float | None = None
    network: bool = False  # no answer at all (connection refused, reset, timeout)


def retry_after_seconds(value: str | None, *, now: datetime) -> float | None:
    """`Retry-After` as seconds from now: delta-seconds or an HTTP date; None if absent or
    unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def retry_delay_s(
    attempts: int,
    retry_after_s: float | None,
    *,
    base_s: float = BASE_DELAY_S,
    max_s: float = MAX_DELAY_S,
    rng: random.Random,
) -> float:
    """How long to wait after the `attempts`-th failed attempt: `base_s` × 2^(attempts−1) at
    most `max_s`, ±`JITTER` (senders retrying at once spread out); or the receiver's
    `Retry-After` (never sooner, never sooner than `base_s`, at most `MAX_RETRY_AFTER_S`)."""
    if retry_after_s is not None:
        return min(max(retry_after_s, base_s), MAX_RETRY_AFTER_S)
    backoff = min(max_s, base_s * 2.0 ** (attempts - 1))
    return backoff * rng.uniform(1 - JITTER, 1 + JITTER)


def classify(response: httpx.Response, *, now: datetime) -> Outcome:
    status = response.status_code
    if 200 <= status < 300:
        return Outcome("delivered")
    error = f"HTTP {status}: {response.text[:ERROR_BODY_CHARS]}".rstrip(": ")
    if status in RETRYABLE_STATUSES or status >= 500:
        retry_after = retry_after_seconds(response.headers.get("Retry-After"), now=now)
        return Outcome("retry", error, retry_after)
    return Outcome("refused", error + " (refused by the receiver, not retried)")


class EventSender:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        http: httpx.AsyncClient,
        *,
        url: str,
        secret: bytes,
        metrics: Metrics | None = None,
        poll_s: float = POLL_S,
        batch: int = BATCH,
        lease: timedelta = LEASE,
        request_deadline_s: float = REQUEST_DEADLINE_S,
        base_delay_s: float = BASE_DELAY_S,
        max_delay_s: float = MAX_DELAY_S,
        max_attempts: int = MAX_ATTEMPTS,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.time,
        owner: TaskOwner | None = None,
    ) -> None:
        if lease.total_seconds() <= request_deadline_s + LEASE_MARGIN_S:
            raise ValueError("the lease must outlast a request")
        self._sessions = sessions
        self._http = http
        self._url = url
        self._secret = secret
        self._metrics = metrics
        self._poll_s = poll_s
        self._batch = batch
        self._lease = lease
        self._deadline_s = request_deadline_s
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._max_attempts = max_attempts
        self._rng = rng or random.Random()
        self._clock = clock
        self._owner = owner if owner is not None else TaskOwner()
        self._woken = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Retryable failures in a row, and when the last of them is due again.
        self._failures = 0
        self._failing_until: datetime | None = None
        self._next_purge = 0.0
        self._next_pending = 0.0

    def start(self) -> None:
        self._task = self._owner.spawn(self._run(), name="event-sender")

    def wake(self) -> None:
        """An event was committed in this process: look now instead of at the next poll."""
        self._woken.set()

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait([self._task])

    async def _run(self) -> None:
        while True:
            self._woken.clear()
            pause: float | None = None
            try:
                pause = await self.send_due()
                await self._housekeeping()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the events stay; the next poll tries again
                if is_storage_down(exc):
                    log.warning(
                        "event sending postponed, storage is unavailable",
                        extra={"fields": {"error": type(exc).__name__}},
                    )
                else:
                    log.exception("event sending failed")
            if pause is not None:
                # The receiver is failing: wake-ups wait too, so the failed events go first.
                await asyncio.sleep(pause)
                continue
            try:
                async with asyncio.timeout(self._poll_s):
                    await self._woken.wait()
            except TimeoutError:
                pass

    async def send_due(self) -> float | None:
        """Post due events batch after batch until none is due. Returns how long to pause
        when the receiver seems down (None otherwise)."""
        while True:
            async with self._sessions.begin() as session:
                claimed = await outbound_events.claim_due(
                    session, now=utcnow(), lease=self._lease, limit=self._batch
                )
            if not claimed:
                return None
            pause = await self._send_batch(claimed, leased_at=time.monotonic())
            if pause is not None:
                return pause

    async def _send_batch(
        self, claimed: Sequence[ClaimedEvent], *, leased_at: float
    ) -> float | None:
        settled = 0
        try:
            for event in claimed:
                lease_left = self._lease.total_seconds() - (time.monotonic() - leased_at)
                if lease_left < self._deadline_s + LEASE_MARGIN_S:
                    return None  # the rest are released below and claimed again at once
                outcome = await self._attempt(event)
                await self._record(event, outcome)
                settled += 1
                if outcome.result != "retry":
                    self._failures = 0
                    self._failing_until = None
                    continue
                if outcome.retry_after_s is not None or self._failures >= FAILURES_TO_PAUSE:
                    return self._pause_s()
            return None
        finally:
            left = [event.id for event in claimed[settled:]]
            if left:
                await self._release(left)

    def _pause_s(self) -> float:
        until = self._failing_until
        wait = self._base_delay_s if until is None else (until - utcnow()).total_seconds()
        return min(max(wait, 0.0), MAX_RETRY_AFTER_S)

    async def _attempt(self, event: ClaimedEvent) -> Outcome:
        body = signing.envelope(event.id, event.kind, event.created_at, event.payload)
        timestamp = int(self._clock())
        headers = signing.headers(
            self._secret, event_id=event.id, kind=event.kind, timestamp=timestamp, body=body
        )
        try:
            async with asyncio.timeout(self._deadline_s):
                response = await self._http.post(self._url, content=body, headers=headers)
        except (httpx.HTTPError, TimeoutError, OSError, FetchError) as exc:
            # A receiver the fetch policy refuses is retried too: the deployment may list it.
            error = f"{type(exc).__name__}: {exc}".rstrip(": ")
            return Outcome("retry", error, network=True)
        return classify(response, now=utcnow())

    async def _record(self, event: ClaimedEvent, outcome: Outcome) -> None:
        now = utcnow()
        attempts = event.attempts + 1
        fields: dict[str, object] = {"event_id": event.id, "kind": event.kind}
        async with self._sessions.begin() as session:
            if outcome.result == "delivered":
                await outbound_events.mark_delivered(session, event.id, now=now)
                self._count("sent")
                return
            error = outcome.error or "failed"
            fields.update(attempts=attempts, error=error[:500])
            if outcome.result == "refused":
                await outbound_events.give_up(session, event.id, error=error)
                self._count("given_up")
                log.error("event refused by the receiver, given up", extra={"fields": fields})
                return
            self._count("failed", reason="network" if outcome.network else "status")
            self._failures += 1
            if attempts >= self._max_attempts:
                await outbound_events.give_up(
                    session, event.id, error=f"{error} (given up after {attempts} attempts)"
                )
                self._count("given_up")
                log.error("event given up after repeated failures", extra={"fields": fields})
                return
            at = now + timedelta(seconds=self._delay_s(attempts, outcome.retry_after_s))
            await outbound_events.retry_later(session, event.id, at=at, error=error)
            if self._failing_until is None or at > self._failing_until:
                self._failing_until = at
            log.warning("event not delivered, retried later", extra={"fields": fields})

    def _delay_s(self, attempts: int, retry_after_s: float | None) -> float:
        return retry_delay_s(
            attempts,
            retry_after_s,
            base_s=self._base_delay_s,
            max_s=self._max_delay_s,
            rng=self._rng,
        )

    def _count(self, what: str, *, reason: str = "") -> None:
        metrics = self._metrics
        if metrics is None:
            return
        if what == "sent":
            metrics.events_sent.inc()
        elif what == "given_up":
            metrics.events_given_up.inc()
        else:
            metrics.events_failed.labels(reason=reason).inc()

    async def _release(self, ids: list[int]) -> None:
        try:
            async with self._sessions.begin() as session:
                await outbound_events.release(session, ids)
        except Exception as exc:
            if not is_storage_down(exc):
                raise
            # The leases run out instead.

    async def _housekeeping(self) -> None:
        now = time.monotonic()
        if now >= self._next_pending:
            self._next_pending = now + PENDING_EVERY_S
            await self.refresh_pending()
        if now >= self._next_purge:
            self._next_purge = now + PURGE_EVERY_S
            await self.purge()

    async def refresh_pending(self) -> int:
        async with self._sessions() as session:
            count = await outbound_events.pending(session)
        if self._metrics is not None:
            self._metrics.events_pending.set(count)
        return count

    async def purge(self, *, now: datetime | None = None) -> int:
        """Delete delivered events older than `DELIVERED_RETENTION` and given-up ones older
        than `GIVEN_UP_RETENTION`, a batch per transaction; how many were deleted."""
        now = now or utcnow()
        total = 0
        while True:
            async with self._sessions.begin() as session:
                deleted = await outbound_events.purge(
                    session,
                    delivered_before=now - DELIVERED_RETENTION,
                    given_up_before=now - GIVEN_UP_RETENTION,
                    limit=PURGE_BATCH,
                )
            total += deleted
            if deleted < PURGE_BATCH:
                return total


EVENT_SENDER = web.AppKey("event_sender", EventSender)


def sender_for(
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    metrics: Metrics,
    *,
    owner: TaskOwner | None = None,
) -> EventSender | None:
    """The sender of a process that runs background work, when an events URL is set."""
    if settings.events_url is None or not settings.run_background:
        return None
    if settings.events_secret is None:  # refused by the settings already
        raise ValueError("RELAYDESK_EVENTS_URL needs RELAYDESK_EVENTS_SECRET")
    return EventSender(
        sessions,
        http,
        url=settings.events_url,
        secret=settings.events_secret.get_secret_value().encode("utf-8"),
        metrics=metrics,
        owner=owner,
    )
