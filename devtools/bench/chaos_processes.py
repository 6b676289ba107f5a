"""The gateway's processes in the chaos run, kept running as an orchestrator keeps them.

`Kept` is the orchestrator (systemd, compose, Kubernetes): it starts a command, waits until it
is ready, and whenever the process exits on its own starts it again after `RESTART_DELAY_S`
(systemd's ``Restart=always``), recording each `Restart`. ``relaydesk serve`` itself starts
again a child that dies, and keeps serving meanwhile: its log is followed
(`devtools.bench.chaos_children`) for the children's new pids and their restarts.

Each start writes a log of its own (``<name>-<n>.log`` in the work directory). ``roles`` names
the live process ids by role: for ``serve`` (run with ``RELAYDESK_LOG_LEVEL=INFO``) they are
read from its "relaydesk listening" log line (``gateway-1``…, ``background-1``…), then from
its supervisor's lines as it replaces children; for the worker it is the process itself;
empty while (re)starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from devtools.bench.chaos_children import ServeChildren
from devtools.bench.chaos_records import Restart
from devtools.bench.harness import START_TIMEOUT_S, ServerNotReady, stop, wait_healthy
from devtools.bench.reply_stack import WORKER_READY

RESTART_DELAY_S = 1.0
POLL_S = 0.2
LISTENING = "relaydesk listening"

# Waits until a started process is ready; its roles (role → pid). Raises ServerNotReady.
Ready = Callable[[subprocess.Popen[bytes], Path], Awaitable[dict[str, int]]]


class Kept:
    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: dict[str, str],
        workdir: Path,
        ready: Ready,
        restarts: list[Restart],
        *,
        follow_children: bool = False,
    ) -> None:
        """`follow_children`: the process is ``serve``, whose log tells of its children."""
        self.name = name
        self.roles: dict[str, int] = {}
        self._command = list(command)
        self._env = env
        self._workdir = workdir
        self._ready = ready
        self._restarts = restarts
        self._starts = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._keeping: asyncio.Task[None] | None = None
        self._follow_children = follow_children
        self._children: ServeChildren | None = None
        self._log_offset = 0
        self._log_rest = b""

    async def start(self) -> None:
        """The first start (raises `ServerNotReady`); then keep it running."""
        await self._launch()
        self._keeping = asyncio.create_task(self._keep())

    async def stop(self) -> None:
        if self._keeping is not None:
            self._keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeping
        if self._process is not None:
            await stop(self._process)
        self.roles = {}

    def log(self) -> str:
        """The end of the current start's log."""
        path = self._log_path()
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def _log_path(self) -> Path:
        return self._workdir / f"{self.name}-{self._starts}.log"

    async def _launch(self) -> None:
        self._starts += 1
        with self._log_path().open("wb") as log:
            self._process = subprocess.Popen(
                self._command,
                env=self._env,
                cwd=self._workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.roles = await self._ready(self._process, self._log_path())
        self._log_offset, self._log_rest = 0, b""
        self._children = ServeChildren(self.roles) if self._follow_children else None

    def _read_children(self) -> None:
        """Feed the log lines written since the last look to the children's follower."""
        if self._children is None:
            return
        with self._log_path().open("rb") as log:
            log.seek(self._log_offset)
            new = log.read()
        self._log_offset += len(new)
        *lines, self._log_rest = (self._log_rest + new).split(b"\n")
        now = time.perf_counter()
        for line in lines:
            restart = self._children.feed(line.decode("utf-8", "replace"), now)
            if restart is not None:
                self._restarts.append(restart)

    async def _keep(self) -> None:
        while True:
            assert self._process is not None
            while self._process.poll() is None:
                self._read_children()
                await asyncio.sleep(POLL_S)
            self.roles = {}
            died, code = time.perf_counter(), self._process.returncode
            await asyncio.sleep(RESTART_DELAY_S)
            try:
                await self._launch()
            except ServerNotReady:
                # Not ready in time (its database still down, say): stopped, seen dead above,
                # and started again.
                self._restarts.append(Restart(died, self.name, code))
                await stop(self._process)
            else:
                ready = time.perf_counter() - died
                self._restarts.append(Restart(died, self.name, code, ready))


def serve_ready(port: int) -> Ready:
    """``relaydesk serve`` is ready when ``/healthz`` answers 200; its roles from its log."""

    async def ready(process: subprocess.Popen[bytes], log: Path) -> dict[str, int]:
        await wait_healthy(port, "/healthz", [process], log)
        return serve_roles(log.read_text(errors="replace"))

    return ready


def serve_roles(log: str) -> dict[str, int]:
    """The children's pids by role, from the last "relaydesk listening" line of a serve log."""
    roles: dict[str, int] = {}
    for line in log.splitlines():
        if LISTENING not in line:
            continue
        try:
            fields = json.loads(line)
        except ValueError:
            continue
        if fields.get("event") != LISTENING:
            continue
        roles = {
            **{f"gateway-{i}": int(pid) for i, pid in enumerate(fields["pids"], start=1)},
            **{
                f"background-{i}": int(pid)
                for i, pid in enumerate(fields["background_pids"], start=1)
            },
        }
    return roles


async def worker_ready(process: subprocess.Popen[bytes], log: Path) -> dict[str, int]:
    """``relaydesk worker`` is ready once it says its consumers run."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while WORKER_READY not in log.read_bytes():
        if process.poll() is not None:
            raise ServerNotReady(f"relaydesk worker exited while starting:\n{log.read_text()}")
        if time.monotonic() > deadline:
            raise ServerNotReady(f"relaydesk worker not ready after {START_TIMEOUT_S:g} s")
        await asyncio.sleep(POLL_S)
    return {"worker": process.pid}
