"""How many model calls may wait at once, and how fast they may start.

A model call is I/O: while it waits, the process does other work, so hundreds may be in flight.
The limits exist for the providers' sake (their concurrency and requests-per-minute quotas) and
the tenants' (one tenant's burst does not take every slot). A call is admitted by its tenant's
gate, then its provider's, then the process's (narrowest first, so calls waiting on a full
tenant hold no slot another tenant could use); each gate has an in-flight cap and an optional
rate per rolling minute. A provider that answered 429 with ``Retry-After`` pauses: calls to it
start again only after that time (the call that got the 429 retries after it too).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["DEFAULT_MODEL_CONCURRENCY", "CallLimits", "ModelGate", "report_retry_after"]

DEFAULT_MODEL_CONCURRENCY = 256
MINUTE_S = 60.0

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

# Set by `ModelGate.admit` for the call it admitted: the retry loop reports a provider's
# Retry-After here without knowing about gates (a task's context follows its awaits).
_retry_after_seen: ContextVar[Callable[[float], None] | None] = ContextVar(
    "retry_after_seen", default=None
)


def report_retry_after(seconds: float) -> None:
    """A provider answered 429 (or 503) with Retry-After: pause the provider of the call being
    made, if a gate admitted it."""
    seen = _retry_after_seen.get()
    if seen is not None:
        seen(seconds)


@dataclass(frozen=True, slots=True)
class CallLimits:
    """``in_flight``: calls waiting on the model at once; ``per_minute``: calls started in any
    rolling minute. None: no limit of that kind."""

    in_flight: int | None = None
    per_minute: int | None = None

    def __post_init__(self) -> None:
        for name in ("in_flight", "per_minute"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None for no limit)")


class _MinuteRate:
    """At most ``per_minute`` starts in any rolling minute: a start waits until the oldest of
    the last ``per_minute`` starts is a minute old."""

    def __init__(self, per_minute: int, clock: Clock, sleep: Sleep) -> None:
        self._per_minute = per_minute
        self._clock = clock
        self._sleep = sleep
        self._starts: deque[float] = deque()

    async def take(self) -> None:
        while True:
            now = self._clock()
            while self._starts and now - self._starts[0] >= MINUTE_S:
                self._starts.popleft()
            if len(self._starts) < self._per_minute:
                self._starts.append(now)
                return
            await self._sleep(MINUTE_S - (now - self._starts[0]))


class _Gate:
    """One tenant's, one provider's or the process's limits, and what is in flight there."""

    def __init__(self, limits: CallLimits, clock: Clock, sleep: Sleep) -> None:
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.in_flight) if limits.in_flight else None
        self._rate = _MinuteRate(limits.per_minute, clock, sleep) if limits.per_minute else None
        self.in_flight = 0
        self.peak = 0
        self.paused_until = 0.0

    async def enter(self) -> None:
        if self._slots is not None:
            await self._slots.acquire()
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    def leave(self) -> None:
        self.in_flight -= 1
        if self._slots is not None:
            self._slots.release()

    async def start(self) -> None:
        if self._rate is not None:
            await self._rate.take()


MAX_TENANT_GATES = 1024


class ModelGate:
    """Admission of model calls in one process (see the module docstring)."""

    def __init__(
        self,
        *,
        process_limit: int = DEFAULT_MODEL_CONCURRENCY,
        provider_limits: CallLimits | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._process = _Gate(CallLimits(in_flight=process_limit), clock, sleep)
        self._provider_limits = provider_limits or CallLimits()
        self._providers: dict[str, _Gate] = {}
        self._tenants: dict[str, _Gate] = {}

    @property
    def in_flight(self) -> int:
        """Model calls admitted in this process and not finished."""
        return self._process.in_flight

    @property
    def peak(self) -> int:
        return self._process.peak

    def _gate(self, gates: dict[str, _Gate], key: str, limits: CallLimits) -> _Gate:
        gate = gates.get(key)
        # A tenant's edited limits apply to calls admitted from now on.
        if gate is None or (gate.limits != limits and gate.in_flight == 0):
            gate = gates[key] = _Gate(limits, self._clock, self._sleep)
        return gate

    @contextlib.asynccontextmanager
    async def admit(
        self, provider: str, tenant: str, tenant_limits: CallLimits | None = None
    ) -> AsyncIterator[None]:
        """Hold a slot of the tenant, the provider and the process for one model call."""
        if tenant not in self._tenants and len(self._tenants) >= MAX_TENANT_GATES:
            # Tenants name request hosts: keep the map bounded by forgetting idle ones.
            for key in [key for key, gate in self._tenants.items() if gate.in_flight == 0]:
                del self._tenants[key]
        chain = [
            self._gate(self._tenants, tenant, tenant_limits or CallLimits()),
            self._gate(self._providers, provider, self._provider_limits),
            self._process,
        ]
        entered: list[_Gate] = []
        try:
            for gate in chain:
                await gate.enter()
                entered.append(gate)
            for gate in chain:
                await gate.start()
            await self._wait_out_pause(chain[1])
            token = _retry_after_seen.set(lambda seconds: self.pause(provider, seconds))
            try:
                yield
            finally:
                _retry_after_seen.reset(token)
        finally:
            for gate in reversed(entered):
                gate.leave()

    def pause(self, provider: str, seconds: float) -> None:
        """The provider asked us to wait (429 with Retry-After): no new call to it starts
        before then."""
        gate = self._gate(self._providers, provider, self._provider_limits)
        gate.paused_until = max(gate.paused_until, self._clock() + max(seconds, 0.0))

    def paused_for(self, provider: str) -> float:
        """Seconds until calls to the provider may start again (0 when they may now)."""
        gate = self._providers.get(provider)
        return 0.0 if gate is None else max(0.0, gate.paused_until - self._clock())

    async def _wait_out_pause(self, provider: _Gate) -> None:
        while (wait := provider.paused_until - self._clock()) > 0:
            await self._sleep(wait)
