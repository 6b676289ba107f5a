"""The turn scheduler: at most `max_active` conversations drain at once, every kick answered."""

from __future__ import annotations

import asyncio

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from gateway.turns.scheduler import TurnScheduler


async def _nothing_pending() -> list[str]:
    return []


async def test_drains_beyond_the_bound_wait_and_all_run() -> None:
    running: set[str] = set()
    most = 0
    drained: list[str] = []
    release = asyncio.Event()

    async def drain(key: str) -> int:
        nonlocal most
        running.add(key)
        most = max(most, len(running))
        await release.wait()
        running.discard(key)
        drained.append(key)
        return 1

    scheduler = TurnScheduler(drain, _nothing_pending, max_active=2)
    for key in ("a", "b", "c", "d", "e"):
        scheduler.kick(key)
    await asyncio.sleep(0.05)
    assert len(running) == 2 and scheduler.active == 2  # three wait for a slot
    release.set()
    async with asyncio.timeout(5):
        await scheduler.idle()
    assert sorted(drained) == ["a", "b", "c", "d", "e"]
    assert most == 2
    assert scheduler.active == 0
    await scheduler.close()


async def test_a_kick_while_waiting_for_a_slot_is_covered_by_that_drain() -> None:
    calls: list[str] = []
    release = asyncio.Event()

    async def drain(key: str) -> int:
        calls.append(key)
        if key == "busy":
            await release.wait()
        return 1

    scheduler = TurnScheduler(drain, _nothing_pending, max_active=1)
    scheduler.kick("busy")
    scheduler.kick("x")
    await asyncio.sleep(0.02)
    scheduler.kick("x")  # "x" still waits for the slot: its coming drain reads this turn too
    release.set()
    async with asyncio.timeout(5):
        await scheduler.idle()
    assert calls == ["busy", "x"]
    await scheduler.close()


async def test_a_kick_during_a_drain_makes_it_look_again() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()

    async def drain(key: str) -> int:
        calls.append(key)
        if len(calls) == 1:
            started.set()
            await release.wait()
        return 1

    scheduler = TurnScheduler(drain, _nothing_pending, max_active=1)
    scheduler.kick("k")
    await started.wait()
    scheduler.kick("k")  # arrived after the drain read what was pending
    release.set()
    async with asyncio.timeout(5):
        await scheduler.idle()
    assert calls == ["k", "k"]
    await scheduler.close()


def test_the_bound_is_at_least_one() -> None:
    with pytest.raises(ValueError):
        TurnScheduler(lambda key: asyncio.sleep(0, 0), _nothing_pending, max_active=0)


async def test_an_unavailable_dependency_is_a_warning_and_a_bug_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors: dict[str, Exception] = {
        "redis-down": RedisConnectionError("Connection refused"),
        "bug": RuntimeError("unexpected"),
    }

    async def drain(key: str) -> int:
        raise errors[key]

    scheduler = TurnScheduler(drain, _nothing_pending)
    with caplog.at_level("WARNING", logger="relaydesk.scheduler"):
        for key in errors:
            scheduler.kick(key)
        async with asyncio.timeout(5):
            await scheduler.idle()
    by_message = {(r.levelname, r.getMessage()): r for r in caplog.records}
    postponed = by_message[("WARNING", "drain postponed, a dependency is unavailable")]
    assert postponed.exc_info is None
    failed = by_message[("ERROR", "drain failed")]
    assert failed.exc_info is not None and isinstance(failed.exc_info[1], RuntimeError)
    assert len(caplog.records) == 2
