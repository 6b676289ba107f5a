"""Stopping background tasks for good."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

RECANCEL_EVERY_S = 0.5


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel `tasks` and wait until every one has ended.

    A library call can swallow a cancellation (the task then runs on into its next await, and a
    single cancel-then-await hangs shutdown for good), so a task still running is cancelled
    again every `RECANCEL_EVERY_S` until it ends. Their results and errors are discarded.
    """
    stopping = list(tasks)
    pending = {task for task in stopping if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_EVERY_S)
    for task in stopping:
        if not task.cancelled():
            task.exception()  # retrieved, so an error is not reported as never retrieved
