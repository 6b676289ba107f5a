"""CPU time used by processes and everything they started, read from ``/proc`` (Linux).

A gateway's ``serve --workers N --background M`` forks its children, so the CPU a load costs the
gateway is that of the whole tree. On a small machine that figure explains what wall-clock
latencies cannot on their own: a side that needs more CPU per reply than the machine has falls
behind whatever its model does, and other work on the machine shows in the latencies, not in it.

The servers behind the gateway are found by command name instead (`named_cpu_s`: every
``postgres`` process, every ``redis-server`` process). They are shared with whatever else runs on
the machine, so only the difference between two samples over a window (`CpuSample.since`) says
what a load cost them. A process's figure includes the children it has waited for (a PostgreSQL
backend that ended, a reaped child of the gateway), so a process that ends inside the window
still counts in the difference, through its parent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["POSTGRES", "REDIS", "CpuSample", "named_cpu_s", "sample_cpu", "tree_cpu_s"]

_PROC = Path("/proc")
# The command names (``/proc/PID/comm``) of the servers' processes.
POSTGRES = "postgres"
REDIS = "redis-server"


@dataclass(frozen=True, slots=True)
class _Process:
    parent: int
    name: str  # the command name, as in /proc/PID/comm
    cpu_s: float  # user + system, its own and that of the children it has waited for


def _stat(pid: str) -> _Process | None:
    """One process as its ``/proc/PID/stat`` describes it; None if it is gone."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: it runs from the first "(" to
    # the last ")".
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    # utime, stime, cutime, cstime (fields 14 to 17)
    ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return _Process(
        parent=int(fields[1]),
        name=head.partition("(")[2],
        cpu_s=ticks / os.sysconf("SC_CLK_TCK"),
    )


def _processes() -> dict[int, _Process] | None:
    """Every live process by pid; None where there is no ``/proc``."""
    if not (_PROC / "self" / "stat").exists():
        return None
    found: dict[int, _Process] = {}
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (process := _stat(entry.name)) is not None:
            found[int(entry.name)] = process
    return found


def _tree_s(processes: dict[int, _Process], roots: Iterable[int]) -> float:
    children: dict[int, list[int]] = {}
    for pid, process in processes.items():
        children.setdefault(process.parent, []).append(pid)
    total = 0.0
    waiting = [pid for pid in roots if pid in processes]
    seen: set[int] = set()
    while waiting:
        pid = waiting.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += processes[pid].cpu_s
        waiting.extend(children.get(pid, ()))
    return total


def _named_s(processes: dict[int, _Process], name: str) -> float:
    return sum(process.cpu_s for process in processes.values() if process.name == name)


def tree_cpu_s(roots: Iterable[int]) -> float | None:
    """User + system CPU seconds of ``roots`` and all their live descendants so far (with the
    children they have waited for); None where there is no ``/proc``."""
    processes = _processes()
    return None if processes is None else _tree_s(processes, roots)


def named_cpu_s(name: str) -> float | None:
    """User + system CPU seconds so far of every live process whose command name is ``name``
    (with the children they have waited for); None where there is no ``/proc``."""
    processes = _processes()
    return None if processes is None else _named_s(processes, name)


@dataclass(frozen=True, slots=True)
class CpuSample:
    """CPU seconds of a gateway's process tree and of the PostgreSQL and Redis servers: so far
    (`sample_cpu`), or over a window (`since`)."""

    gateway_s: float
    postgres_s: float
    redis_s: float

    def since(self, earlier: CpuSample) -> CpuSample:
        """What was used between ``earlier`` and this sample."""
        return CpuSample(
            gateway_s=self.gateway_s - earlier.gateway_s,
            postgres_s=self.postgres_s - earlier.postgres_s,
            redis_s=self.redis_s - earlier.redis_s,
        )


def sample_cpu(gateway: Iterable[int]) -> CpuSample | None:
    """One reading of ``/proc``: the tree of the ``gateway`` roots, every `POSTGRES` and every
    `REDIS` process; None where there is no ``/proc``."""
    processes = _processes()
    if processes is None:
        return None
    return CpuSample(
        gateway_s=_tree_s(processes, gateway),
        postgres_s=_named_s(processes, POSTGRES),
        redis_s=_named_s(processes, REDIS),
    )
