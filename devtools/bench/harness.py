"""The processes the end-to-end benchmarks start (``relaydesk serve``, ``relaydesk worker``,
bare servers): the command, its environment, loopback ports, waiting until a process answers
and stopping it, and the percentile their latencies are reported by."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from devtools.twilio_webhook import BOT

START_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0
# The auth token of the benchmarks' Twilio account: the gateways verify the signed webhooks with
# it, and the local Twilio API is reached with it.
TWILIO_TOKEN = "relaydesk-bench-twilio-token"


class ServerNotReady(RuntimeError):
    """A started process exited, or did not answer its health check in time."""


def relaydesk_command() -> list[str]:
    """The ``relaydesk`` script next to this interpreter, else ``python -m gateway.cli``."""
    script = Path(sys.executable).with_name("relaydesk")
    return [str(script)] if script.exists() else [sys.executable, "-m", "gateway.cli"]


def clean_env(**values: str) -> dict[str, str]:
    """This process's environment without any ``RELAYDESK_*`` of the surrounding shell, plus
    ``values``: only what the caller sets configures the process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAYDESK_")}
    env.update(values)
    return env


def gateway_env(
    *,
    database_url: str,
    redis_url: str,
    port: int,
    twilio_api: str,
    twilio_account: str,
    **values: str,
) -> dict[str, str]:
    """A `clean_env` for a gateway on ``127.0.0.1:port`` with the offline model and warnings
    only, whose WhatsApp replies go to the Twilio API at ``twilio_api``; plus ``values``."""
    return clean_env(
        RELAYDESK_DATABASE_URL=database_url,
        RELAYDESK_REDIS_URL=redis_url,
        RELAYDESK_PUBLIC_URL=f"http://127.0.0.1:{port}",
        RELAYDESK_LOG_LEVEL="WARNING",
        RELAYDESK_MODEL="offline",
        TWILIO_AUTH_TOKEN=TWILIO_TOKEN,
        TWILIO_ACCOUNT_SID=twilio_account,
        TWILIO_WHATSAPP_FROM=BOT,
        TWILIO_API_BASE=twilio_api,
        **values,
    )


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def percentile(sorted_ms: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of already sorted samples (0 for none)."""
    if not sorted_ms:
        return 0.0
    index = min(len(sorted_ms) - 1, max(0, round(fraction * len(sorted_ms)) - 1))
    return sorted_ms[index]


async def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after `STOP_GRACE_S`; returns once the process is gone."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.to_thread(process.wait, STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        await asyncio.to_thread(process.wait)


async def wait_healthy(
    port: int, path: str, processes: Sequence[subprocess.Popen[bytes]], log: Path
) -> None:
    """Until ``GET http://127.0.0.1:<port><path>`` answers 200; raises `ServerNotReady` (with
    the end of ``log``) when one of ``processes`` exits first, or after `START_TIMEOUT_S`."""
    deadline = time.monotonic() + START_TIMEOUT_S
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in processes):
                raise ServerNotReady(f"server exited while starting:\n{log.read_text()[-2000:]}")
            try:
                if (await http.get(f"http://127.0.0.1:{port}{path}")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    raise ServerNotReady(f"server on port {port} not healthy after {START_TIMEOUT_S:g} s")


@asynccontextmanager
async def serving(
    commands: Sequence[Sequence[str]],
    env: dict[str, str],
    workdir: Path,
    log_name: str,
    port: int,
    health_path: str,
) -> AsyncIterator[list[subprocess.Popen[bytes]]]:
    """Start ``commands`` (in ``workdir``, all writing to ``workdir/log_name``) serving
    ``port``; yields the started processes, in order, once `wait_healthy` passes, and stops
    them all on exit."""
    log_path = workdir / log_name
    started: list[subprocess.Popen[bytes]] = []
    with log_path.open("wb") as log:
        try:
            for command in commands:
                started.append(
                    subprocess.Popen(
                        list(command), env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT
                    )
                )
            await wait_healthy(port, health_path, started, log_path)
            yield started
        finally:
            for process in started:
                await stop(process)
