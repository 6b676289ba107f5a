"""`relaydesk serve --workers N --background M`: N gateway processes sharing one port on one
machine, and M background processes beside them (one by default).

Each child is a fresh interpreter (multiprocessing "spawn", no fork of a running event loop)
running the ordinary app. The gateway processes listen with `reuse_port=True`, so the kernel
spreads new connections over them, and only acknowledge: a webhook's 200 waits for its inbox
commit alone. The background process listens on no port; at a lower CPU priority (nice
`BACKGROUND_NICE`) it stores the inbox's messages, answers turns, retries deliveries and compacts
memory, woken over Redis by the gateway processes. Under a burst the kernel gives the
acknowledgements the CPU first; the durable work after them catches up when it ends. Several
background processes (here, or `relaydesk background` on other machines) share the work
safely: inbox rows are claimed under leases, a conversation is answered by whichever process
takes its lock, and the fencing token refuses a reply written by a holder whose lock expired.

The parent only supervises: SIGTERM or SIGINT stops every child gracefully; a child that dies
on its own is logged and the parent stops the others and exits non-zero, leaving the
restart to the orchestrator (systemd, compose, Kubernetes) rather than hiding a crash loop.

Several processes share nothing in memory, so this needs PostgreSQL and Redis: the embedded
SQLite file, in-process locks, dedupe and compaction queue belong to one process.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TYPE_CHECKING

from gateway.config import Settings

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger("relaydesk.supervisor")

STOP_GRACE_S = 8.0
POLL_S = 0.2
BACKGROUND_NICE = 10


def _shared_services_missing(settings: Settings) -> list[str]:
    missing = []
    if settings.is_sqlite:
        missing.append("RELAYDESK_DATABASE_URL=postgresql+asyncpg://…")
    if settings.redis_url is None:
        missing.append("RELAYDESK_REDIS_URL=redis://…")
    return missing


def refusal(settings: Settings, workers: int, background: int = 1) -> str | None:
    """Why `workers` gateway and `background` background processes cannot run on these
    settings, or None."""
    several = workers >= 2 or background >= 2
    missing = _shared_services_missing(settings) if several else []
    if not missing:
        return None
    asked = f"--workers {workers}" if workers >= 2 else f"--background {background}"
    return (
        f"{asked} needs PostgreSQL and Redis: the embedded SQLite database and the "
        "in-process locks, dedupe and queue belong to one process. Set "
        + " and ".join(missing)
        + " (run `relaydesk migrate` first), or serve with one worker."
    )


def background_refusal(settings: Settings) -> str | None:
    """Why a standalone background process (`relaydesk background`) cannot run, or None."""
    missing = _shared_services_missing(settings)
    if not missing:
        return None
    return (
        "relaydesk background needs PostgreSQL and Redis: it does the work of gateways started "
        "with RELAYDESK_RUN_BACKGROUND=false, which share its database and wake it over Redis. "
        "Set " + " and ".join(missing) + " (run `relaydesk migrate` first)."
    )


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


def _exit_with_parent(parent: int) -> None:
    """Stop this child if the supervisor disappears without stopping it (e.g. SIGKILL)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def freeze_startup_objects() -> None:
    """Leave what the process built to start (modules, engines, the tokenizer's tables) out of
    every later garbage collection: a full collection would walk those objects again and
    again, taking the CPU (and a pause) from the requests."""
    gc.collect()
    gc.freeze()


async def _freeze_after_startup(app: web.Application) -> None:
    freeze_startup_objects()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed (a dependency everywhere but Windows): its own work per
    request is smaller than asyncio's, which leaves more of the CPU to the gateway."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_child(settings: Settings, host: str, port: int, parent: int) -> None:
    """Entry point of one gateway process (module level, so "spawn" can import it)."""
    from aiohttp import web

    from gateway.app import create_app
    from gateway.http.deadlines import keepalive_timeout_s
    from gateway.runtime.logs import configure_logging

    configure_logging(settings.log_level)
    _exit_with_parent(parent)
    log.info("gateway process started", extra={"fields": {"pid": os.getpid()}})
    app = create_app(settings)
    app.on_startup.append(_freeze_after_startup)
    web.run_app(
        app,
        host=host,
        port=port,
        reuse_port=True,
        access_log=None,
        print=None,
        keepalive_timeout=keepalive_timeout_s(settings),
        loop=new_event_loop(),
    )


def run_background_child(settings: Settings, parent: int) -> None:
    """Entry point of the background process: the app's background work, no HTTP listener."""
    from gateway.runtime.logs import configure_logging

    configure_logging(settings.log_level)
    _exit_with_parent(parent)
    run_background(settings, BACKGROUND_NICE)


def run_background(settings: Settings, nice: int) -> None:
    """The app's background work in this process (storing the inbox, answering turns,
    retrying deliveries, compacting when enabled), listening on no port, until SIGTERM or
    SIGINT; ``nice`` lowers its CPU priority first."""
    from gateway.app import create_app

    if nice:
        os.nice(nice)
    log.info("background process started", extra={"fields": {"pid": os.getpid()}})
    loop = new_event_loop()
    try:
        app = create_app(settings.model_copy(update={"run_background": True}))
        loop.run_until_complete(_run_background(app))
    finally:
        loop.close()


async def _run_background(app: web.Application) -> None:
    from aiohttp import web

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()  # enters the app's cleanup contexts: its background work starts
    freeze_startup_objects()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def serve_workers(
    settings: Settings, host: str, port: int, workers: int, background: int = 1
) -> int:
    """Run `workers` gateway processes on host:port and `background` background processes
    until a signal (0) or a crash (1)."""
    if settings.should_auto_migrate:
        _migrate_once(settings)
    context = multiprocessing.get_context("spawn")
    stop_requested: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_requested.append(signum)

    previous = {
        signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)
    }
    children: list[BaseProcess] = []
    from gateway.webchat.visitors import with_visitor_key

    # Every process must accept the web chat visitor ids any of them issued.
    settings = with_visitor_key(settings)
    acknowledging = settings.model_copy(update={"run_background": False})
    try:
        for index in range(background):
            worker: BaseProcess = context.Process(
                target=run_background_child,
                args=(settings, os.getpid()),
                name=f"relaydesk-background-{index + 1}",
            )
            worker.start()
            children.append(worker)
        for index in range(workers):
            child: BaseProcess = context.Process(
                target=run_child,
                args=(acknowledging, host, port, os.getpid()),
                name=f"relaydesk-gateway-{index + 1}",
            )
            child.start()
            children.append(child)
        log.info(
            "relaydesk listening",
            extra={
                "fields": {
                    "url": f"http://{host}:{port}",
                    "workers": workers,
                    "pids": [child.pid for child in children[background:]],
                    "background_pids": [child.pid for child in children[:background]],
                }
            },
        )
        while not stop_requested:
            wait([child.sentinel for child in children], timeout=POLL_S)
            dead = [child for child in children if not child.is_alive()]
            if dead and not stop_requested:
                for child in dead:
                    log.error(
                        "a child process exited; stopping the others",
                        extra={"fields": {"pid": child.pid, "exitcode": child.exitcode}},
                    )
                return 1
        log.info("stopping gateway processes", extra={"fields": {"signal": stop_requested[0]}})
        return 0
    finally:
        _stop(children)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stop(children: list[BaseProcess]) -> None:
    for child in children:
        if child.is_alive():
            child.terminate()  # SIGTERM: aiohttp shuts the app down gracefully
    deadline = time.monotonic() + STOP_GRACE_S
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            log.warning(
                "gateway process did not stop; killing it", extra={"fields": {"pid": child.pid}}
            )
            child.kill()
            child.join()
