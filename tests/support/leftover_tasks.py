"""Every coroutine test ends with no task of its own left running.

pytest-asyncio closes a test's event loop by cancelling the tasks still on it once and waiting
for them all, with no time limit: one that swallowed that single cancellation (a library call
caught it and went on awaiting) holds the close until the run's timeout, and the test fails
after passing. This fixture, torn down after every other fixture of the test (the app under
test is closed by then), cancels whatever is left again every half second until it ends
(`gateway.runtime.tasks.cancel_and_wait`, the same rule the gateway's own shutdown follows) and
names those tasks in the log, so a leak is visible instead of a hang.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator

import pytest

from gateway.runtime.tasks import cancel_and_wait

FIXTURE = "_no_task_left_behind"
# Long enough for a task that was only slow to stop; a task still running then fails the test.
STOP_WITHIN_S = 30.0

log = logging.getLogger("tests.leftover_tasks")


@pytest.fixture
async def _no_task_left_behind() -> AsyncIterator[None]:
    yield
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    if left:
        log.info("tasks left by the test: %s", sorted(task.get_name() for task in left))
        await asyncio.wait_for(cancel_and_wait(left), STOP_WITHIN_S)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every coroutine test asks for the fixture first, so that it is torn down last."""
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            if FIXTURE not in item.fixturenames:
                item.fixturenames.insert(0, FIXTURE)
