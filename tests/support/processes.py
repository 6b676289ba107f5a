"""Starting real `relaydesk` processes from tests: the command, a clean environment, a port."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("relaydesk")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gateway.cli"]


def clean_env(**values: str) -> dict[str, str]:
    """The environment with only the RELAYDESK_* settings given here (none of the shell's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYDESK_")}
    env.update(values)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def nice_of(pid: int) -> int:
    """The niceness of process `pid` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of stat; fields here start at field 3
