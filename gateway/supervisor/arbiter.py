"""The supervising parent of `serve --workers N --background M`: it starts the children, starts
again any child that dies on its own, and stops them all on SIGTERM or SIGINT.

A child that dies (any exit code, any signal) is logged at error with its role and number,
pid and how it ended, and a new process takes its place with the same role and settings; the
other children are left alone, so a gateway killed under load costs the surviving gateway
nothing, and a killed background process only delays the work it held. The replacement
starts at once after an isolated death and later and later while the child keeps dying soon
after each start (`gateway.supervisor.backoff`); such a crash loop is logged at error with the
count, and every restart is counted by role in the gateways' `/metrics`
(`gateway.supervisor.restart_counts`).

It never gives up on a child. Uvicorn's supervisor never does either; gunicorn's arbiter
halts only when a worker reports that it could not boot (the application did not import or
load), which here shows before any child starts: the parent reads the settings and imports
the app itself (and migrates, unless told not to). What kills a child later (a database or
Redis outage at its start, memory, a signal) passes, or needs an operator either way, and
stopping the healthy children with it would turn one child's trouble into a whole outage; the
backoff keeps a child that cannot start to one attempt every `Backoff.max_wait_s`, and the
crash loop shows in the log and in the metrics, for alerting.

Only a signal to the parent stops the children (gracefully, SIGKILL after `STOP_GRACE_S`); a
child that exits while they stop is not started again.

Children are forked from this parent, which runs no event loop while it supervises and has
loaded the app's modules and the tokenizer already (`children.preload`), so a replacement
serves within the app's own start-up time, not an interpreter's with its imports.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.context import ForkContext
from multiprocessing.process import BaseProcess
from types import FrameType

from gateway.config import Settings
from gateway.supervisor.backoff import Backoff, Exit
from gateway.supervisor.children import preload, run_background_child, run_gateway_child
from gateway.supervisor.restart_counts import RestartCounts
from gateway.supervisor.specs import ChildSpec, Role, child_specs

log = logging.getLogger("relaydesk.supervisor")

STOP_GRACE_S = 8.0
POLL_S = 0.2

# Starts the process of a child, returns it started.
Start = Callable[[ChildSpec], BaseProcess]


def serve_workers(
    settings: Settings, host: str, port: int, workers: int, background: int = 1
) -> int:
    """Run `workers` gateway processes on host:port and `background` background processes,
    each started again when it dies, until SIGTERM or SIGINT; 0 once they all stopped."""
    from gateway.webchat.visitors import with_visitor_key

    preload()
    if settings.should_auto_migrate:
        _migrate_once(settings)

    # Every process must accept the web chat visitor ids any of them issued.
    settings = with_visitor_key(settings)
    context = multiprocessing.get_context("fork")
    restarts = RestartCounts(context)
    stop_requested: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.append(signum)

    previous = {
        signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)
    }
    arbiter = Arbiter(
        child_specs(workers, background),
        _starter(context, settings, host, port, restarts),
        restarts,
    )
    try:
        arbiter.start_all()
        log.info(
            "relaydesk listening",
            extra={
                "fields": {
                    "url": f"http://{host}:{port}",
                    "workers": workers,
                    "pids": arbiter.pids(Role.GATEWAY),
                    "background_pids": arbiter.pids(Role.BACKGROUND),
                }
            },
        )
        arbiter.supervise(stopping=lambda: bool(stop_requested))
        log.info("stopping the child processes", extra={"fields": {"signal": stop_requested[0]}})
        return 0
    finally:
        arbiter.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _starter(
    context: ForkContext, settings: Settings, host: str, port: int, restarts: RestartCounts
) -> Start:
    acknowledging = settings.model_copy(update={"run_background": False})

    def start(spec: ChildSpec) -> BaseProcess:
        if spec.role is Role.GATEWAY:
            process = context.Process(
                target=run_gateway_child,
                args=(acknowledging, host, port, restarts),
                name=spec.name,
            )
        else:
            process = context.Process(target=run_background_child, args=(settings,), name=spec.name)
        process.start()
        return process

    return start


@dataclass
class _Slot:
    """One child's place: its process while it runs, or when its replacement is due."""

    spec: ChildSpec
    process: BaseProcess | None = None
    started_at: float = 0.0
    streak: int = 0  # the deaths of its current streak (`Backoff`)
    restart_at: float = 0.0


class Arbiter:
    """Keeps one process running per spec: `start_all`, then `supervise` until `stopping()`,
    then `stop`."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        start: Start,
        restarts: RestartCounts,
        backoff: Backoff | None = None,
    ) -> None:
        self._slots = [_Slot(spec) for spec in specs]
        self._start = start
        self._restarts = restarts
        self._backoff = backoff if backoff is not None else Backoff()

    def pids(self, role: Role) -> list[int | None]:
        """The running children's pids of `role`, in spec order."""
        return [
            slot.process.pid
            for slot in self._slots
            if slot.spec.role is role and slot.process is not None
        ]

    def start_all(self) -> None:
        for slot in self._slots:
            self._start_in(slot)

    def supervise(self, stopping: Callable[[], bool]) -> None:
        """Start again each child that dies, until `stopping()` (checked before every
        restart: a child dying while they stop stays dead)."""
        while not stopping():
            self._wait()
            if stopping():
                return
            self._reap()
            now = time.monotonic()
            for slot in self._slots:
                if slot.process is None and slot.restart_at <= now and not stopping():
                    self._restart(slot)

    def stop(self) -> None:
        """SIGTERM to every running child (each stops gracefully), SIGKILL to those still
        running after `STOP_GRACE_S`."""
        running = [slot.process for slot in self._slots if slot.process is not None]
        for process in running:
            if process.is_alive():
                process.terminate()
        deadline = time.monotonic() + STOP_GRACE_S
        for process in running:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning(
                    "child process did not stop; killing it", extra={"fields": {"pid": process.pid}}
                )
                process.kill()
                process.join()

    def _restart(self, slot: _Slot) -> None:
        try:
            self._start_in(slot)
        except OSError as exc:  # no fork now (memory, the process limit): like a quick death
            restart = self._backoff.after_death(slot.streak, 0.0)
            slot.streak, slot.restart_at = restart.streak, time.monotonic() + restart.wait_s
            log.error(
                "child process could not be started",
                extra={
                    "fields": {
                        **_named(slot.spec),
                        "error": f"{type(exc).__name__}: {exc}",
                        "restart_in_s": restart.wait_s,
                    }
                },
            )
            return
        self._restarts.add(slot.spec.role)
        log.info(
            "child process started again",
            extra={"fields": {**_named(slot.spec), "pid": _pid(slot.process)}},
        )

    def _start_in(self, slot: _Slot) -> None:
        slot.process = self._start(slot.spec)
        slot.started_at = time.monotonic()

    def _wait(self) -> None:
        """Until a child ends, a replacement is due, or `POLL_S` (a signal is seen then)."""
        sentinels = [slot.process.sentinel for slot in self._slots if slot.process is not None]
        due = [slot.restart_at for slot in self._slots if slot.process is None]
        timeout = min([POLL_S, *(max(0.0, at - time.monotonic()) for at in due)])
        if sentinels:
            wait(sentinels, timeout=timeout)
        else:
            time.sleep(timeout)

    def _reap(self) -> None:
        now = time.monotonic()
        for slot in self._slots:
            process = slot.process
            if process is None or process.is_alive():
                continue
            uptime = now - slot.started_at
            restart = self._backoff.after_death(slot.streak, uptime)
            slot.process, slot.streak, slot.restart_at = None, restart.streak, now + restart.wait_s
            ended = Exit.from_exitcode(process.exitcode or 0)
            log.error(
                "child process died; another takes its place",
                extra={
                    "fields": {
                        **_named(slot.spec),
                        "pid": process.pid,
                        **ended.fields(),
                        "uptime_s": round(uptime, 1),
                        "restart_in_s": restart.wait_s,
                    }
                },
            )
            if restart.crash_loop:
                log.error(
                    "child process keeps dying soon after it starts",
                    extra={
                        "fields": {
                            **_named(slot.spec),
                            "deaths_in_a_row": restart.streak,
                            "restart_in_s": restart.wait_s,
                        }
                    },
                )
            process.close()  # its sentinel, now that it was waited for


def _named(spec: ChildSpec) -> dict[str, object]:
    return {"child": spec.label, "role": spec.role.value}


def _pid(process: BaseProcess | None) -> int | None:
    return None if process is None else process.pid


def _migrate_once(settings: Settings) -> None:
    # Children would all migrate at start; do it once here so they find the schema at head.
    from gateway.storage.engine import make_engine
    from gateway.storage.migrate import upgrade

    async def run() -> None:
        engine = make_engine(settings.database_url)
        try:
            await upgrade(engine)
        finally:
            await engine.dispose()

    asyncio.run(run())
