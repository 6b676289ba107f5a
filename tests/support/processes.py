"""Starting real `relaydesk` processes from tests: the command, a clean environment, a port
(those of the benchmarks, `devtools.bench.harness`)."""

from __future__ import annotations

from pathlib import Path

from devtools.bench.harness import clean_env, free_port, relaydesk_command

COMMAND = relaydesk_command()

__all__ = ["COMMAND", "alive", "clean_env", "free_port", "nice_of", "children_of"]


def nice_of(pid: int) -> int:
    """The niceness of process `pid` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of stat; fields here start at field 3


def children_of(parent: int) -> list[int]:
    """The child processes of `parent` (a multiprocessing resource tracker left out), Linux."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"resource_tracker" not in command:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """Whether any thread of process `pid` still runs (Linux). A process killed with SIGKILL
    shows as a zombie as soon as its main thread has exited, while its other threads may still
    hold its files (sockets included) open a moment longer."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # that thread is gone
        if state not in ("Z", "X"):
            return True
    return False
