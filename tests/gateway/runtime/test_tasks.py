"""Shutdown ends a background task even when something inside it swallowed the cancellation;
the task owner tracks what it started, forgets what ended and logs a task that died."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.runtime.tasks import TaskOwner, cancel_and_wait


class Stubborn:
    """A task body that swallows its first cancellation, as a misbehaving library call does."""

    def __init__(self) -> None:
        self.swallowed = 0

    async def __call__(self) -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if self.swallowed == 0:
                    self.swallowed += 1
                    continue
                raise


async def test_a_task_that_swallows_a_cancellation_is_still_stopped() -> None:
    stubborn = Stubborn()
    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait([task]), timeout=5)
    assert task.cancelled() and stubborn.swallowed == 1


async def test_finished_and_failed_tasks_are_fine() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    done = asyncio.create_task(asyncio.sleep(0))
    failed = asyncio.create_task(fails())
    await asyncio.sleep(0.01)
    await cancel_and_wait([done, failed])  # the error is retrieved, not raised
    assert done.done() and isinstance(failed.exception(), RuntimeError)


async def test_a_task_is_counted_while_it_runs_and_forgotten_when_it_ends() -> None:
    owner = TaskOwner()
    release = asyncio.Event()

    async def waits() -> str:
        await release.wait()
        return "done"

    first = owner.spawn(waits(), name="first")
    second = owner.spawn(waits(), name="second")
    assert owner.running == 2
    assert first.get_name() == "first" and second.get_name() == "second"
    release.set()
    assert await first == "done" and await second == "done"
    await asyncio.sleep(0)  # the done callbacks run on the next loop pass
    assert owner.running == 0


async def test_a_crashed_task_is_logged_with_its_name_and_forgotten(
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner = TaskOwner()

    async def crashes() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="relaydesk.tasks"):
        task = owner.spawn(crashes(), name="sweeper")
        await asyncio.wait({task})
        await asyncio.sleep(0)
    assert owner.running == 0
    [record] = [r for r in caplog.records if r.name == "relaydesk.tasks"]
    assert record.getMessage() == "background task died"
    assert record.fields == {"task": "sweeper", "error": "RuntimeError"}  # type: ignore[attr-defined]
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


async def test_a_cancelled_or_finished_task_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    owner = TaskOwner()
    with caplog.at_level(logging.DEBUG, logger="relaydesk.tasks"):
        finished = owner.spawn(asyncio.sleep(0), name="finished")
        cancelled = owner.spawn(asyncio.sleep(3600), name="cancelled")
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.wait({finished, cancelled})
        await asyncio.sleep(0)
    assert owner.running == 0
    assert [r for r in caplog.records if r.name == "relaydesk.tasks"] == []


async def test_close_cancels_a_stubborn_task_and_waits_for_it() -> None:
    owner = TaskOwner()
    stubborn = Stubborn()
    task = owner.spawn(stubborn(), name="stubborn")
    plain = owner.spawn(asyncio.sleep(3600), name="plain")
    await asyncio.sleep(0)
    await asyncio.wait_for(owner.close(), timeout=5)
    assert task.cancelled() and stubborn.swallowed == 1
    assert plain.cancelled()
    assert owner.running == 0


async def test_a_task_spawned_after_close_is_stopped_and_close_waits_for_late_ones() -> None:
    owner = TaskOwner()
    late: list[asyncio.Task[None]] = []

    async def spawns_on_its_way_out() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            # What a part finishing its last step does while the flow closes.
            late.append(owner.spawn(asyncio.sleep(3600), name="late"))

    owner.spawn(spawns_on_its_way_out(), name="first")
    await asyncio.sleep(0)
    await asyncio.wait_for(owner.close(), timeout=5)
    assert owner.running == 0 and late and late[0].cancelled()
    after = owner.spawn(asyncio.sleep(3600), name="after close")
    with pytest.raises(asyncio.CancelledError):
        await after
    assert owner.running == 0
