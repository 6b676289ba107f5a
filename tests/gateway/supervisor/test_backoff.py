"""A child that died is started again at once after an isolated death, later and later (capped)
while it keeps dying soon after each start, at once again after it stayed up a while; and how
it ended reads as an exit code or a signal's name."""

from __future__ import annotations

import signal

from gateway.supervisor.backoff import Backoff, Exit, Restart

POLICY = Backoff(first_wait_s=0.5, max_wait_s=4.0, stable_after_s=30.0, crash_loop_at=3)


def _deaths(uptimes: list[float]) -> list[Restart]:
    """The restarts after deaths following each other, each after its uptime."""
    restarts, streak = [], 0
    for uptime in uptimes:
        restart = POLICY.after_death(streak, uptime)
        restarts.append(restart)
        streak = restart.streak
    return restarts


def test_an_isolated_death_is_restarted_at_once() -> None:
    assert POLICY.after_death(0, 3600.0) == Restart(streak=1, wait_s=0.0, crash_loop=False)
    # Even a child that died soon after its first start gets one immediate restart.
    assert POLICY.after_death(0, 1.0) == Restart(streak=1, wait_s=0.0, crash_loop=False)


def test_quick_deaths_in_a_row_wait_longer_and_longer_up_to_the_cap() -> None:
    restarts = _deaths([1.0] * 7)
    assert [r.wait_s for r in restarts] == [0.0, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert [r.streak for r in restarts] == [1, 2, 3, 4, 5, 6, 7]
    assert [r.crash_loop for r in restarts] == [False, False, True, True, True, True, True]


def test_a_child_that_stayed_up_a_while_starts_a_new_streak() -> None:
    restarts = _deaths([1.0, 1.0, 1.0, 30.0, 1.0])
    assert [r.wait_s for r in restarts] == [0.0, 0.5, 1.0, 0.0, 0.5]
    assert restarts[3] == Restart(streak=1, wait_s=0.0, crash_loop=False)
    # Just short of `stable_after_s` is still soon after the start.
    assert POLICY.after_death(2, 29.9).streak == 3


def test_how_a_child_ended() -> None:
    assert Exit.from_exitcode(0).fields() == {"exitcode": 0}
    assert Exit.from_exitcode(3).fields() == {"exitcode": 3}
    assert Exit.from_exitcode(-signal.SIGKILL).fields() == {"signal": "SIGKILL"}
    assert Exit.from_exitcode(-signal.SIGSEGV) == Exit(code=None, signal="SIGSEGV")
    assert Exit.from_exitcode(-200).fields() == {"signal": "signal 200"}
