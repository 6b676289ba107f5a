"""The processes of ``relaydesk bench reply``: gateways and a compaction worker.

The worker runs only while the customers of the side with compaction talk; it starts after the
other side's jobs were taken off the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.bench.harness import (
    START_TIMEOUT_S,
    ServerNotReady,
    free_port,
    gateway_env,
    relaydesk_command,
    serving,
    stop,
)
from devtools.bench.reply_talk import ACCOUNT_SID, ReplyBenchError

GATEWAY_PROCESSES = 2
CONSUMERS = 2
WORKER_READY = b"compaction consumer(s) running"


@dataclass(frozen=True, slots=True)
class Gateway:
    """One ``relaydesk serve --workers`` to start: its name (for its log), port, env and any
    further ``serve`` arguments."""

    name: str
    port: int
    env: dict[str, str]
    serve_args: tuple[str, ...] = ()


def answering_gateway(
    name: str,
    *,
    database_url: str,
    redis_url: str,
    twilio_api: str,
    serve_args: tuple[str, ...] = (),
    **values: str,
) -> Gateway:
    """A `Gateway` on a free port with the offline model, whose WhatsApp replies go to the
    Twilio API at ``twilio_api`` (account `ACCOUNT_SID`), and that never compacts: that is
    ``relaydesk worker``'s job, in production as in the benchmarks. ``values`` are set over
    those settings (another model, say)."""
    port = free_port()
    env = gateway_env(
        database_url=database_url,
        redis_url=redis_url,
        port=port,
        twilio_api=twilio_api,
        twilio_account=ACCOUNT_SID,
        RELAYDESK_RUN_COMPACTION="false",
    )
    env.update(values)
    return Gateway(name, port, env, serve_args)


@contextlib.asynccontextmanager
async def gateways(configs: Sequence[Gateway], workdir: Path) -> AsyncIterator[tuple[int, ...]]:
    """Start the gateways (each ``serve --workers``, one after the other); yields the pids of
    their ``serve`` processes (which fork the rest) once all of them answer ``/healthz``, stops
    them all at the end."""
    command = relaydesk_command()
    pids: list[int] = []
    async with contextlib.AsyncExitStack() as started:
        for config in configs:
            serve = [*command, "serve", "--workers", str(GATEWAY_PROCESSES)]
            try:
                processes = await started.enter_async_context(
                    serving(
                        [[*serve, "--port", str(config.port), *config.serve_args]],
                        config.env,
                        workdir,
                        f"serve-{config.name}.log",
                        config.port,
                        "/healthz",
                    )
                )
            except ServerNotReady as exc:
                raise ReplyBenchError(str(exc)) from exc
            pids.extend(process.pid for process in processes)
        yield tuple(pids)


@contextlib.asynccontextmanager
async def worker(env: dict[str, str], workdir: Path) -> AsyncIterator[None]:
    """``relaydesk worker --count CONSUMERS``; yields once its consumers run."""
    log_path = workdir / "worker.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*relaydesk_command(), "worker", "--count", str(CONSUMERS)],
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while WORKER_READY not in log_path.read_bytes():
                if process.poll() is not None:
                    raise ReplyBenchError(
                        f"relaydesk worker exited while starting:\n{log_path.read_text()[-2000:]}"
                    )
                if time.monotonic() > deadline:
                    raise ReplyBenchError(f"relaydesk worker not ready after {START_TIMEOUT_S:g} s")
                await asyncio.sleep(0.1)
            yield
        finally:
            await stop(process)
