"""Admission of model calls: process, provider and tenant in-flight caps, rates per rolling
minute, and the pause a provider asks for with 429 + Retry-After."""

from __future__ import annotations

import asyncio

import pytest

from gateway.providers.limits import CallLimits, ModelGate


class FakeTime:
    """A clock that moves only when a waiter sleeps (so a minute passes in no time)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def _hold(
    gate: ModelGate,
    provider: str,
    tenant: str,
    release: asyncio.Event,
    limits: CallLimits | None = None,
    started: list[str] | None = None,
    name: str = "",
) -> None:
    async with gate.admit(provider, tenant, limits):
        if started is not None:
            started.append(name)
        await release.wait()


async def test_the_process_limit_caps_calls_in_flight_and_admits_the_rest_later() -> None:
    gate = ModelGate(process_limit=3)
    release = asyncio.Event()
    tasks = [asyncio.create_task(_hold(gate, "openai:m", "t", release)) for _ in range(5)]
    await asyncio.sleep(0.01)
    assert gate.in_flight == 3
    release.set()
    await asyncio.gather(*tasks)
    assert gate.in_flight == 0 and gate.peak == 3


async def test_a_full_tenant_holds_no_slot_that_another_tenant_needs() -> None:
    gate = ModelGate(process_limit=3)
    release = asyncio.Event()
    started: list[str] = []
    narrow = CallLimits(in_flight=1)
    busy = [
        asyncio.create_task(_hold(gate, "p", "busy", release, narrow, started, f"busy{i}"))
        for i in range(5)
    ]
    await asyncio.sleep(0.01)
    others = [
        asyncio.create_task(_hold(gate, "p", "other", release, None, started, f"other{i}"))
        for i in range(2)
    ]
    await asyncio.sleep(0.01)
    # One call of the busy tenant, both of the other: its waiting calls took no process slot.
    assert sorted(started) == ["busy0", "other0", "other1"]
    release.set()
    await asyncio.gather(*busy, *others)
    assert len(started) == 7


async def test_provider_in_flight_limit_applies_per_provider() -> None:
    gate = ModelGate(process_limit=10, provider_limits=CallLimits(in_flight=2))
    release = asyncio.Event()
    tasks = [asyncio.create_task(_hold(gate, "a", "t", release)) for _ in range(4)]
    tasks += [asyncio.create_task(_hold(gate, "b", "t", release)) for _ in range(4)]
    await asyncio.sleep(0.01)
    assert gate.in_flight == 4  # two of each provider
    release.set()
    await asyncio.gather(*tasks)


async def test_requests_per_minute_spread_starts_over_rolling_minutes() -> None:
    time = FakeTime()
    gate = ModelGate(provider_limits=CallLimits(per_minute=3), clock=time.clock, sleep=time.sleep)
    starts: list[float] = []
    for _ in range(7):
        async with gate.admit("p", "t"):
            starts.append(time.now)
    assert starts[:3] == [1000.0] * 3
    assert starts[3:6] == [1060.0] * 3  # the next three once the first minute has passed
    assert starts[6] == 1120.0


async def test_a_tenant_rate_limit_and_an_edited_limit() -> None:
    time = FakeTime()
    gate = ModelGate(clock=time.clock, sleep=time.sleep)
    one = CallLimits(per_minute=1)
    for _ in range(2):
        async with gate.admit("p", "t", one):
            pass
    assert time.now == 1060.0
    async with gate.admit("p", "t", CallLimits(per_minute=100)):  # raised: no wait now
        pass
    assert time.now == 1060.0


async def test_a_paused_provider_starts_no_call_before_the_time_it_asked_for() -> None:
    time = FakeTime()
    gate = ModelGate(clock=time.clock, sleep=time.sleep)
    gate.pause("p", 12.5)
    assert gate.paused_for("p") == 12.5
    async with gate.admit("other", "t"):
        assert time.now == 1000.0  # other providers are not paused
    async with gate.admit("p", "t"):
        assert time.now == 1012.5
    assert gate.paused_for("p") == 0.0


def test_limits_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="in_flight"):
        CallLimits(in_flight=0)
    with pytest.raises(ValueError, match="per_minute"):
        CallLimits(per_minute=0)
