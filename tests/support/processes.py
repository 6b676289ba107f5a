"""Starting real `relaydesk` processes from tests: the command, a clean environment, a port
(those of the benchmarks, `devtools.bench.harness`)."""

from __future__ import annotations

from pathlib import Path

from devtools.bench.harness import clean_env, free_port, relaydesk_command

COMMAND = relaydesk_command()

__all__ = ["COMMAND", "clean_env", "free_port", "nice_of"]


def nice_of(pid: int) -> int:
    """The niceness of process `pid` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of stat; fields here start at field 3
