"""When a child that died is started again: at once after an isolated crash, later and later
while it keeps dying soon after each start.

Deaths count in a streak: a death soon after the child's start (it ran less than
`stable_after_s`) adds one to the streak, the death of a child that had stayed up longer starts
a new streak. The first death of a streak is restarted at once (a gateway killed under load is
back within its start-up time); each further one doubles the wait from `first_wait_s` up to
`max_wait_s`, so a child that cannot start (its database refuses it, the machine is out of
memory) costs a start every `max_wait_s` rather than a CPU. A streak of `crash_loop_at` is a
crash loop, which the supervisor logs as such, with the count.

Pure: the supervisor passes in the streak so far and how long the child ran.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    first_wait_s: float = 0.5
    max_wait_s: float = 30.0
    stable_after_s: float = 30.0
    crash_loop_at: int = 3

    def after_death(self, streak: int, uptime_s: float) -> Restart:
        """The restart of a child that died after `uptime_s` seconds, its previous deaths
        making a streak of `streak` (0 for none)."""
        now = 1 if uptime_s >= self.stable_after_s else streak + 1
        wait = 0.0 if now == 1 else min(self.max_wait_s, self.first_wait_s * 2 ** (now - 2))
        return Restart(streak=now, wait_s=wait, crash_loop=now >= self.crash_loop_at)


@dataclass(frozen=True, slots=True)
class Restart:
    """`streak`: the deaths of the streak, this one included; `wait_s`: how long to wait
    before starting the replacement; `crash_loop`: the streak is long enough to say so."""

    streak: int
    wait_s: float
    crash_loop: bool


@dataclass(frozen=True, slots=True)
class Exit:
    """How a child process ended: an exit code, or the signal that killed it."""

    code: int | None
    signal: str | None

    @classmethod
    def from_exitcode(cls, exitcode: int) -> Exit:
        """From a multiprocessing exit code (negative: killed by that signal)."""
        if exitcode >= 0:
            return cls(code=exitcode, signal=None)
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return cls(code=None, signal=name)

    def fields(self) -> dict[str, int | str]:
        return {"exitcode": self.code} if self.code is not None else {"signal": str(self.signal)}
