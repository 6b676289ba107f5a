"""What each child of `serve --workers N --background M` runs: a gateway process (the app on
the shared port, acknowledging only) or a background process (the app's background work, on
no port, at a lower CPU priority). `relaydesk background` runs the latter on its own."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.config import Settings
from gateway.runtime.tracing import configure_tracing
from gateway.supervisor.restart_counts import RestartCounts

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger("relaydesk.supervisor")

BACKGROUND_NICE = 10


def preload() -> None:
    """Load, once and in the supervisor, what every child loads first (the app's modules, the
    tokenizer's tables): the children are forked with it, so a replacement serves sooner, and
    the tables' memory is shared."""
    import gateway.app  # noqa: F401
    from context import load_encoding

    load_encoding()


def run_gateway_child(settings: Settings, host: str, port: int, restarts: RestartCounts) -> None:
    """Entry point of one gateway process: the app on host:port (shared with the other
    gateways, `reuse_port`), until SIGTERM or SIGINT."""
    from aiohttp import web

    from gateway.app import create_app
    from gateway.http.deadlines import keepalive_timeout_s
    from gateway.keys import METRICS
    from gateway.runtime.logs import configure_logging

    _child_signals()
    configure_logging(settings.log_level, levels=settings.logger_levels)
    _exit_with_parent()
    log.info("gateway process started", extra={"fields": {"pid": os.getpid()}})
    configure_tracing()
    app = create_app(settings)
    restarts.register(app[METRICS].registry)
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


def run_background_child(settings: Settings) -> None:
    """Entry point of one background process."""
    from gateway.runtime.logs import configure_logging

    _child_signals()
    configure_logging(settings.log_level, levels=settings.logger_levels)
    _exit_with_parent()
    run_background(settings, BACKGROUND_NICE)


def run_background(settings: Settings, nice: int, *, heartbeat: Path | None = None) -> None:
    """The app's background work in this process (storing the inbox, answering turns,
    retrying deliveries, compacting when enabled), listening on no port, until SIGTERM or
    SIGINT; ``nice`` lowers its CPU priority first. With ``heartbeat``, the loop keeps that
    file fresh once the work has started (`gateway.runtime.heartbeat`)."""
    from gateway.app import create_app

    if nice:
        os.nice(nice)
    log.info("background process started", extra={"fields": {"pid": os.getpid()}})
    configure_tracing()
    loop = new_event_loop()
    try:
        app = create_app(settings.model_copy(update={"run_background": True}))
        loop.run_until_complete(_run_background(app, heartbeat))
    finally:
        loop.close()


async def _run_background(app: web.Application, heartbeat: Path | None) -> None:
    from aiohttp import web

    from gateway.runtime.heartbeat import beating

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()  # enters the app's cleanup contexts: its background work starts
    freeze_startup_objects()
    try:
        if heartbeat is None:
            await stop.wait()
        else:
            async with beating(heartbeat):
                await stop.wait()
    finally:
        await runner.cleanup()


def _child_signals() -> None:
    """A forked child starts with the supervisor's handlers, which only take note of a
    signal: give SIGTERM and SIGINT back their defaults until the app installs its own."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _exit_with_parent() -> None:
    """Stop this child if the supervisor disappears without stopping it (e.g. SIGKILL)."""
    parent = os.getppid()

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
