"""Background tasks: one owner that starts and tracks them, and stopping them for good."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

log = logging.getLogger("relaydesk.tasks")

RECANCEL_EVERY_S = 0.5

T = TypeVar("T")


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


class TaskOwner:
    """The one owner of the message flow's long-lived background tasks.

    Every part of the flow that works in the background (the scheduler's sweeper and drains,
    the deliver lanes and the delivery-records writer, the inbox processor and writer, the
    memory worker and owed summaries, background facts, retention, the event sender, the web
    chat fan-out, the pub/sub listeners) gets this owner at construction and `spawn`s through
    it. A task is forgotten once it ends; one that died of an unexpected exception is logged
    with its name (nobody else may ever await it). Each part still stops its own tasks in its
    own `close`, in the order that part needs (the inbox writer finishes its commit, replies
    are sent in order...); the owner's `close` runs after them all and cancels whatever is
    left, so no task outlives the flow.

    Left local, not spawned here: tasks that live within one call and are awaited or cancelled
    by it (the typing indicator and the reply preview of one model call, a lock's renewal
    watchdog while the lock is held), and a pub/sub send (`coordination.pubsub.Channel`: one
    short PUBLISH per wake-up, which its channel cancels on close if still in flight).
    """

    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()
        self._closed = False

    @property
    def running(self) -> int:
        """How many tasks started here have not ended yet."""
        return len(self._running)

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        task = asyncio.create_task(coro, name=name)
        self._running.add(task)
        task.add_done_callback(self._ended)
        if self._closed:
            # Started by a part still finishing its last step after the flow closed: stopped
            # at its first await rather than left running past the flow.
            task.cancel()
        return task

    def _ended(self, task: asyncio.Task[Any]) -> None:
        self._running.discard(task)
        if task.cancelled():
            return
        error = task.exception()  # retrieved here, so asyncio does not report it again
        if error is not None:
            log.error(
                "background task died",
                exc_info=error,
                extra={"fields": {"task": task.get_name(), "error": type(error).__name__}},
            )

    async def close(self) -> None:
        """Cancel every task still running and wait until each has ended; a task spawned from
        then on is cancelled at once."""
        self._closed = True
        while self._running:  # a task ending may have spawned another one meanwhile
            await cancel_and_wait(list(self._running))
