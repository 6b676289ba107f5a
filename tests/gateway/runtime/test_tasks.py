"""Shutdown ends a background task even when something inside it swallowed the cancellation."""

from __future__ import annotations

import asyncio

from gateway.runtime.tasks import cancel_and_wait


async def test_a_task_that_swallows_a_cancellation_is_still_stopped() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed == 0:  # what a misbehaving library call does once
                    swallowed += 1
                    continue
                raise

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait([task]), timeout=5)
    assert task.cancelled() and swallowed == 1


async def test_finished_and_failed_tasks_are_fine() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    done = asyncio.create_task(asyncio.sleep(0))
    failed = asyncio.create_task(fails())
    await asyncio.sleep(0.01)
    await cancel_and_wait([done, failed])  # the error is retrieved, not raised
    assert done.done() and isinstance(failed.exception(), RuntimeError)
