"""CPU time used by processes and everything they started, read from ``/proc`` (Linux).

A gateway's ``serve --workers N --background M`` forks its children, so the CPU a load costs the
gateway is that of the whole tree. On a small machine that figure explains what wall-clock
latencies cannot on their own: a side that needs more CPU per reply than the machine has falls
behind whatever its model does, and other work on the machine shows in the latencies, not in it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["tree_cpu_s"]

_PROC = Path("/proc")


def _stat(pid: str) -> tuple[int, float] | None:
    """The parent pid and the user + system seconds of one process; None if it is gone."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    fields = text.rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return int(fields[1]), ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(roots: Iterable[int]) -> float | None:
    """User + system CPU seconds of ``roots`` and all their live descendants so far; None where
    there is no ``/proc``."""
    if not (_PROC / "self" / "stat").exists():
        return None
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(entry.name)
        if stat is None:
            continue
        parent, seconds = stat
        pid = int(entry.name)
        used[pid] = seconds
        children.setdefault(parent, []).append(pid)
    total = 0.0
    waiting = [pid for pid in roots if pid in used]
    seen: set[int] = set()
    while waiting:
        pid = waiting.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += used[pid]
        waiting.extend(children.get(pid, ()))
    return total
