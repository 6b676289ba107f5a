"""Timing helpers and the measurement of our own builder on a populated database.

`time_assemble` times `assemble_context` exactly as the gateway runs it for one request: a
fresh session, the storage reads, the window build. `capture_request` records the
`ContextRequest` that call handed to `build_window`, so the pure build can be timed on the
very same inputs.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar
from unittest import mock

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import Budget, ContextRequest, TokenCounter, Window, build_window
from devtools.bench.populate import SeededCustomer
from gateway.memory.recall import RecallCache
from gateway.tenants import TenantSettings
from gateway.turns import window as context_service
from gateway.turns.window import AssembledContext, assemble_context

K = TypeVar("K")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Timing:
    """Median and spread of one series, in milliseconds."""

    median_ms: float
    min_ms: float
    max_ms: float
    runs: int


def _summarize(samples: list[float]) -> Timing:
    ms = [sample * 1000.0 for sample in samples]
    return Timing(statistics.median(ms), min(ms), max(ms), len(ms))


@contextmanager
def _quiet_gc() -> Iterator[None]:
    """Collect before a series and keep the collector out of the timed calls."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def time_sync(
    calls: Mapping[K, Callable[[], T]], repeat: int, warmup: int = 1
) -> dict[K, tuple[Timing, T]]:
    """Time every call ``repeat`` times after ``warmup`` untimed rounds.

    Rounds are interleaved (each round calls every entry once), so a burst of load on the
    machine falls on all entries alike instead of skewing one of them.
    """
    results: dict[K, T] = {}
    for _ in range(warmup):
        for key, call in calls.items():
            results[key] = call()
    samples: dict[K, list[float]] = {key: [] for key in calls}
    with _quiet_gc():
        for _ in range(repeat):
            for key, call in calls.items():
                started = time.perf_counter()
                results[key] = call()
                samples[key].append(time.perf_counter() - started)
    return {key: (_summarize(samples[key]), results[key]) for key in calls}


async def time_async(
    calls: Mapping[K, Callable[[], Awaitable[T]]], repeat: int, warmup: int = 1
) -> dict[K, tuple[Timing, T]]:
    """`time_sync` for coroutine functions (awaited on the running loop)."""
    results: dict[K, T] = {}
    for _ in range(warmup):
        for key, call in calls.items():
            results[key] = await call()
    samples: dict[K, list[float]] = {key: [] for key in calls}
    with _quiet_gc():
        for _ in range(repeat):
            for key, call in calls.items():
                started = time.perf_counter()
                results[key] = await call()
                samples[key].append(time.perf_counter() - started)
    return {key: (_summarize(samples[key]), results[key]) for key in calls}


async def assemble_once(
    sessions: async_sessionmaker[AsyncSession],
    customer: SeededCustomer,
    settings: TenantSettings,
    counter: TokenCounter,
    message: str,
    recall_cache: RecallCache | None = None,
) -> AssembledContext:
    """One storage-backed build, in its own session as a request would have."""
    async with sessions() as session:
        return await assemble_context(
            session,
            identity=customer.identity,
            settings=settings,
            counter=counter,
            message=message,
            recall_cache=recall_cache,
        )


async def time_assemble(
    sessions: async_sessionmaker[AsyncSession],
    customers: Mapping[int, SeededCustomer],
    settings: TenantSettings,
    counter: TokenCounter,
    message: str,
    repeat: int,
) -> dict[int, tuple[Timing, Window]]:
    """Storage-backed builds for every customer (by size), interleaved, with the recall cache
    a running gateway keeps (the warm-up builds fill it, as a conversation's first turn does)."""
    cache = RecallCache()

    def call(customer: SeededCustomer) -> Callable[[], Awaitable[AssembledContext]]:
        return lambda: assemble_once(sessions, customer, settings, counter, message, cache)

    timed = await time_async(
        {size: call(customer) for size, customer in customers.items()}, repeat, warmup=2
    )
    return {size: (timing, built.window) for size, (timing, built) in timed.items()}


async def capture_request(
    sessions: async_sessionmaker[AsyncSession],
    customer: SeededCustomer,
    settings: TenantSettings,
    counter: TokenCounter,
    message: str,
) -> tuple[ContextRequest, Budget]:
    """The inputs `assemble_context` gives `build_window` for this customer (one untimed call)."""
    seen: list[tuple[ContextRequest, Budget]] = []

    def recording(request: ContextRequest, budget: Budget, counter: TokenCounter) -> Window:
        seen.append((request, budget))
        return build_window(request, budget, counter)

    with mock.patch.object(context_service, "build_window", recording):
        await assemble_once(sessions, customer, settings, counter, message)
    if len(seen) != 1:
        raise RuntimeError(f"expected one build_window call, saw {len(seen)}")
    return seen[0]


def time_build_window(
    inputs: Mapping[int, tuple[ContextRequest, Budget]], counter: TokenCounter, repeat: int
) -> dict[int, tuple[Timing, Window]]:
    """The pure build on captured inputs (by size), interleaved."""

    def call(request: ContextRequest, budget: Budget) -> Callable[[], Window]:
        return lambda: build_window(request, budget, counter)

    return time_sync(
        {size: call(request, budget) for size, (request, budget) in inputs.items()},
        repeat,
        warmup=2,
    )
