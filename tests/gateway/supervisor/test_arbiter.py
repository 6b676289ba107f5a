"""The arbiter keeps one process per child spec: a child that dies is started again in its
place (at once, then later and later while it keeps dying), the others untouched, each restart
counted and logged; once stopping, a dead child stays dead and the running ones are stopped.

Real processes, forked from the test: targets that sleep or exit at once stand in for the
app (the whole `serve` is in tests/flows/processes/test_serve_supervision.py)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.process import BaseProcess

import pytest

from gateway.supervisor.arbiter import Arbiter
from gateway.supervisor.backoff import Backoff
from gateway.supervisor.restart_counts import RestartCounts
from gateway.supervisor.specs import ChildSpec, Role, child_specs
from tests.support.processes import alive

# Serial: the backoff is measured in real time.
pytestmark = pytest.mark.serial

FORK = multiprocessing.get_context("fork")
SPECS = child_specs(workers=2, background=1)


def _sleep() -> None:
    time.sleep(60)


def _exit_at_once() -> None:
    sys.exit(3)


class Starts:
    """A start function that records each start: (spec, process, time); its call number
    `fails_at` (from 1), if any, fails as a fork can."""

    def __init__(
        self, target: Callable[[ChildSpec], Callable[[], None]], fails_at: int | None = None
    ) -> None:
        self.target = target
        self.fails_at = fails_at
        self.calls = 0
        self.started: list[tuple[ChildSpec, BaseProcess, float]] = []

    def __call__(self, spec: ChildSpec) -> BaseProcess:
        self.calls += 1
        if self.calls == self.fails_at:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        process = FORK.Process(target=self.target(spec), name=spec.name)
        process.start()
        self.started.append((spec, process, time.monotonic()))
        return process

    def pids(self) -> list[int | None]:
        return [process.pid for _, process, _ in self.started]


@contextmanager
def _arbiter(
    starts: Starts, backoff: Backoff | None = None
) -> Iterator[tuple[Arbiter, RestartCounts]]:
    counts = RestartCounts(FORK)
    arbiter = Arbiter(SPECS, starts, counts, backoff)
    try:
        yield arbiter, counts
    finally:
        arbiter.stop()


def _fields(record: logging.LogRecord) -> dict[str, object]:
    """The structured fields of a log record (`extra={"fields": ...}`)."""
    fields: dict[str, object] = record.__dict__["fields"]
    return fields


def _until(condition: Callable[[], bool], deadline_s: float) -> Callable[[], bool]:
    """A `stopping` for `supervise`: true once `condition` holds or `deadline_s` passed."""
    deadline = time.monotonic() + deadline_s
    return lambda: condition() or time.monotonic() > deadline


def test_a_killed_child_is_started_again_in_its_place_and_the_others_are_untouched(
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts = Starts(lambda spec: _sleep)
    with (
        _arbiter(starts) as (arbiter, counts),
        caplog.at_level(logging.INFO, "relaydesk.supervisor"),
    ):
        arbiter.start_all()
        background, first, second = starts.pids()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        killed_at = time.monotonic()
        arbiter.supervise(stopping=_until(lambda: len(starts.started) == 4, 10))

        assert len(starts.started) == 4
        spec, replacement, started_at = starts.started[3]
        assert spec == ChildSpec(Role.GATEWAY, 1)  # the same role and number
        assert started_at - killed_at < 1.0  # an isolated death: at once
        assert arbiter.pids(Role.GATEWAY) == [replacement.pid, second]
        assert arbiter.pids(Role.BACKGROUND) == [background]
        assert all(alive(pid) for pid in (background, second, replacement.pid) if pid)
        assert (counts.get(Role.GATEWAY), counts.get(Role.BACKGROUND)) == (1, 0)
    [died] = [r for r in caplog.records if r.getMessage().startswith("child process died")]
    assert died.levelno == logging.ERROR
    assert _fields(died)["child"] == "gateway 1" and _fields(died)["role"] == "gateway"
    assert _fields(died)["pid"] == first and _fields(died)["signal"] == "SIGKILL"
    assert _fields(died)["restart_in_s"] == 0.0
    # Stopped: every child it runs now, the replacement included, is gone.
    assert not any(alive(pid) for pid in (background, second, replacement.pid) if pid)


def test_a_child_that_keeps_dying_waits_longer_each_time_and_is_called_a_crash_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts = Starts(lambda spec: _exit_at_once if spec == ChildSpec(Role.BACKGROUND, 1) else _sleep)
    backoff = Backoff(first_wait_s=0.3, max_wait_s=0.6, stable_after_s=30.0, crash_loop_at=3)
    with (
        _arbiter(starts, backoff) as (arbiter, counts),
        caplog.at_level(logging.INFO, "relaydesk.supervisor"),
    ):
        arbiter.start_all()
        gateways = arbiter.pids(Role.GATEWAY)
        arbiter.supervise(stopping=_until(lambda: counts.get(Role.BACKGROUND) == 5, 20))
        assert counts.get(Role.BACKGROUND) == 5
        assert arbiter.pids(Role.GATEWAY) == gateways  # never touched
    times = [at for spec, _, at in starts.started if spec.role is Role.BACKGROUND]
    gaps = [later - earlier for earlier, later in zip(times, times[1:], strict=False)]
    # At once, then 0.3 s, 0.6 s, and no longer than the cap: 0.6 s (plus each child's life).
    assert len(gaps) == 5 and gaps[0] < 0.3, gaps
    assert all(gap >= wait for gap, wait in zip(gaps[1:], (0.3, 0.6, 0.6, 0.6), strict=True)), gaps
    assert gaps[4] < 1.2, gaps  # not doubled past the cap
    died = [r for r in caplog.records if r.getMessage().startswith("child process died")]
    assert [_fields(r)["exitcode"] for r in died] == [3] * 5
    loops = [r for r in caplog.records if r.getMessage().startswith("child process keeps dying")]
    assert [_fields(r)["deaths_in_a_row"] for r in loops] == [3, 4, 5]
    assert {r.levelno for r in loops} == {logging.ERROR}


def test_a_child_that_cannot_be_started_is_tried_again_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    starts = Starts(lambda spec: _sleep, fails_at=len(SPECS) + 1)  # the first restart
    backoff = Backoff(first_wait_s=0.3, max_wait_s=0.6, stable_after_s=30.0, crash_loop_at=3)
    with (
        _arbiter(starts, backoff) as (arbiter, counts),
        caplog.at_level(logging.INFO, "relaydesk.supervisor"),
    ):
        arbiter.start_all()
        _, first, _ = starts.pids()
        os.kill(first or 0, signal.SIGKILL)
        arbiter.supervise(stopping=_until(lambda: counts.get(Role.GATEWAY) == 1, 10))
        assert counts.get(Role.GATEWAY) == 1  # started on the second try
        assert starts.started[3][0] == ChildSpec(Role.GATEWAY, 1)
    [failed] = [r for r in caplog.records if r.getMessage().startswith("child process could not")]
    assert failed.levelno == logging.ERROR
    assert _fields(failed)["child"] == "gateway 1" and _fields(failed)["restart_in_s"] == 0.3
    assert str(_fields(failed)["error"]).startswith("BlockingIOError")


def test_a_child_dying_while_the_arbiter_is_told_to_stop_stays_dead() -> None:
    starts = Starts(lambda spec: _sleep)
    with _arbiter(starts) as (arbiter, counts):
        arbiter.start_all()
        background, first, second = starts.pids()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        # Not stopping when it starts waiting, stopping by the time the death shows.
        answers = iter([False])
        arbiter.supervise(stopping=lambda: next(answers, True))
        assert len(starts.started) == 3 and counts.get(Role.GATEWAY) == 0
        assert alive(background or 0) and alive(second or 0)
    # Then stopped: the others too.
    assert not any(alive(pid or 0) for pid in (background, second))
