"""A real `relaydesk serve --workers N --background M` for the process tests: migrated on a
fresh PostgreSQL database, on the test Redis, its WhatsApp replies sent to a local Twilio; its
children told apart by role, and the gateway instances answering on its port."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from devtools.bench.harness import TWILIO_TOKEN, gateway_env, serving
from devtools.local_twilio import LocalTwilio
from gateway.supervisor import BACKGROUND_NICE
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    require_postgres_and_redis,
)
from tests.support.processes import COMMAND, alive, children_of, free_port, nice_of
from tests.support.webhook_load import ACCOUNT

# The Twilio auth token the gateways verify webhooks with: sign for `Served.root` with it.
TOKEN = TWILIO_TOKEN


@dataclass(frozen=True, slots=True)
class Children:
    """The live children of `serve`, by role (the background ones run at `BACKGROUND_NICE`)."""

    gateways: frozenset[int]
    background: frozenset[int]


@dataclass(frozen=True, slots=True)
class Served:
    """The running `serve`: its root URL (also the public URL webhooks are signed for), port,
    process, database, the local Twilio its replies reach, and its log."""

    root: str
    port: int
    process: subprocess.Popen[bytes]
    database_url: str
    twilio: LocalTwilio
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def children(self) -> Children:
        """The children running now (one that died and was not yet waited for left out)."""
        niceness = {}
        for pid in children_of(self.process.pid):
            try:
                niceness[pid] = nice_of(pid)
            except OSError:
                continue  # gone between the listing and the read
            if not alive(pid):
                del niceness[pid]
        return Children(
            gateways=frozenset(pid for pid, nice in niceness.items() if nice != BACKGROUND_NICE),
            background=frozenset(pid for pid, nice in niceness.items() if nice == BACKGROUND_NICE),
        )


@asynccontextmanager
async def serve_workers(
    tmp_path: Path, *, workers: int, background: int, **env: str
) -> AsyncIterator[Served]:
    """`relaydesk serve --workers workers --background background` (the offline model, no
    compaction, warnings only, plus `env`), yielded once `/healthz` answers; stopped (SIGTERM)
    and its database dropped on leaving. Its log is printed when the body fails."""
    await require_postgres_and_redis()
    twilio = LocalTwilio()
    async with twilio.serving() as twilio_api:
        url = await create_database()
        try:
            port = free_port()
            values = {"RELAYDESK_RUN_COMPACTION": "false", **env}
            environment = gateway_env(
                database_url=url,
                redis_url=REDIS_URL,
                port=port,
                twilio_api=twilio_api,
                twilio_account=ACCOUNT,
                **values,
            )
            migrated = await asyncio.to_thread(
                subprocess.run,
                [*COMMAND, "migrate"],
                env=environment,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert migrated.returncode == 0, migrated.stderr
            command = [*COMMAND, "serve", "--port", str(port)]
            command += ["--workers", str(workers), "--background", str(background)]
            async with serving([command], environment, tmp_path, "serve.log", port, "/healthz") as (
                process,
            ):
                served = Served(
                    f"http://127.0.0.1:{port}", port, process, url, twilio, tmp_path / "serve.log"
                )
                try:
                    yield served
                except BaseException:
                    print(served.output()[-6000:])  # beside the failure (pytest shows stdout)
                    raise
        finally:
            await drop_database(url)


async def instances_answering(port: int, *, at_least: int, deadline_s: float) -> dict[str, int]:
    """Ask /healthz over a new connection each time until `at_least` requests were answered
    and two distinct processes answered (or `deadline_s` passed); return instance id ->
    answers."""
    seen: dict[str, int] = {}
    answered = 0
    deadline = time.monotonic() + deadline_s
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as http:
        while time.monotonic() < deadline and (answered < at_least or len(seen) < 2):
            try:
                async with http.get(f"http://127.0.0.1:{port}/healthz") as response:
                    body = await response.json()
                    assert response.status == 200, body
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.2)  # not listening yet
                continue
            seen[body["instance"]] = seen.get(body["instance"], 0) + 1
            answered += 1
    return seen
