"""``serve``'s children as its supervisor replaces them, followed through its log.

`relaydesk serve` starts again any child that dies (`gateway.supervisor.arbiter`) and keeps
the others serving. Its log says so: "child process died; another takes its place" (the
child's label, ``background 1``), then "child process started again" with the new pid, then
the new child's own "background process started" / "gateway process started" line once it
runs. `ServeChildren` reads those lines as they come: the live pids by role (``background-1``)
for the next fault, and each replacement as a `Restart` whose ``ready_after_s`` runs from the
death seen to the new child's own line.
"""

from __future__ import annotations

import json
import signal
from dataclasses import dataclass

from devtools.bench.chaos_records import Restart

DIED = "child process died; another takes its place"
STARTED_AGAIN = "child process started again"
CHILD_STARTED = ("background process started", "gateway process started")


@dataclass(frozen=True, slots=True)
class _Replacing:
    label: str
    died_at: float
    exit_code: int | None


def role_key(label: str) -> str:
    """The role key of a child's label: ``background 1`` → ``background-1``."""
    return label.replace(" ", "-")


class ServeChildren:
    def __init__(self, roles: dict[str, int]) -> None:
        self.roles = roles  # updated in place: the `Kept` process's roles
        self._died: dict[str, _Replacing] = {}  # by label, until its replacement is started
        self._starting: dict[int, _Replacing] = {}  # by the replacement's pid, until it runs

    def feed(self, line: str, now: float) -> Restart | None:
        """Take one log line seen at ``now``; the restart it completes, if any."""
        if '"event"' not in line:
            return None
        try:
            fields = json.loads(line)
        except ValueError:
            return None
        event = fields.get("event")
        if event == DIED:
            label = str(fields.get("child", ""))
            self._died[label] = _Replacing(label, now, _exit_code(fields))
            self.roles.pop(role_key(label), None)
        elif event == STARTED_AGAIN:
            label, pid = str(fields.get("child", "")), int(fields["pid"])
            self.roles[role_key(label)] = pid
            replacing = self._died.pop(label, None)
            if replacing is not None:
                self._starting[pid] = replacing
        elif event in CHILD_STARTED:
            replacing = self._starting.pop(int(fields.get("pid", -1)), None)
            if replacing is not None:
                return Restart(
                    replacing.died_at,
                    f"serve {replacing.label}",
                    replacing.exit_code,
                    now - replacing.died_at,
                )
        return None


def _exit_code(fields: dict[str, object]) -> int | None:
    """The child's exit code as `subprocess` gives it: negative for a signal."""
    code = fields.get("exit_code")
    if isinstance(code, int):
        return code
    name = fields.get("signal")
    if isinstance(name, str) and name in signal.Signals.__members__:
        return -int(signal.Signals[name])
    return None
