"""docker/compose.yaml's topology run natively: the shipped nginx.conf in Debian's nginx in
front of two `relaydesk serve` gateways that only acknowledge, one `relaydesk background`, one
`relaydesk worker`, on a fresh PostgreSQL database and the test Redis, each a real process
with the settings compose gives its container (the proxy trusted by the gateways, one web
chat secret, compaction in the worker).

Meta's Graph API is a local server (`LocalGraph`), so the Cloud API channel is on end to end.
"""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import aiohttp

from tests.support.cloud_stack import SECRET as CLOUD_APP_SECRET
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    require_postgres_and_redis,
    unavailable,
)
from tests.support.graph_server import ACCESS_TOKEN, PHONE_NUMBER_ID, LocalGraph
from tests.support.nginx import LocalNginx, nginx_missing
from tests.support.processes import COMMAND, clean_env, free_port
from tests.support.stack import API_KEY, WEBCHAT_SECRET

# nginx connects to the gateways from here; the clients of the tests from other loopback
# addresses (127.0.0.2, 127.0.0.3...), which nginx names in X-Forwarded-For.
PROXY_ADDRESS = "127.0.0.1"
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Topology:
    proxy: str  # nginx's URL
    gateways: tuple[str, ...]  # each gateway's own URL, behind the proxy's back
    env: Mapping[str, str]  # the environment every Relaydesk process got
    graph: LocalGraph
    logs: Path

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """`relaydesk <args>` with the deployment's environment, as `docker compose exec`."""
        return subprocess.run(
            [*COMMAND, *args],
            env=dict(self.env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def log_tail(self) -> str:
        return log_tail(self.logs)


def log_tail(logs: Path) -> str:
    """The end of every process's log, to explain a failure."""
    parts = []
    for path in sorted(logs.glob("*.log")):
        parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)


async def _healthy(url: str) -> bool:
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{url}/healthz", timeout=aiohttp.ClientTimeout(2)) as answer:
                return answer.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


class _Processes:
    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.started: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self, name: str, args: list[str], env: Mapping[str, str]) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [*COMMAND, *args], env=dict(env), stdout=log, stderr=subprocess.STDOUT
        )
        self.started.append((process, log))

    def check_alive(self) -> None:
        for process, _ in self.started:
            if process.poll() is not None:
                raise AssertionError(f"{process.args!r} exited early:\n{log_tail(self.logs)}")

    async def stop(self) -> None:
        for process, _ in self.started:
            if process.poll() is None:
                process.terminate()
        for process, log in self.started:
            try:
                await asyncio.to_thread(process.wait, 15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


@asynccontextmanager
async def running_topology(directory: Path) -> AsyncIterator[Topology]:
    await require_postgres_and_redis()
    why = nginx_missing()
    if why is not None:
        unavailable("nginx", why)
    logs = directory / "logs"
    logs.mkdir(parents=True)
    graph = LocalGraph()
    url = await create_database()
    processes = _Processes(logs)
    try:
        async with AsyncExitStack() as stack:
            graph_base = await stack.enter_async_context(graph.serving())
            deployment = uuid.uuid4().hex
            env = clean_env(
                RELAYDESK_DATABASE_URL=url,
                RELAYDESK_REDIS_URL=REDIS_URL,
                RELAYDESK_API_KEY=API_KEY,
                RELAYDESK_WEBCHAT_SECRET=WEBCHAT_SECRET,
                RELAYDESK_RUN_COMPACTION="false",
                RELAYDESK_LOG_LEVEL="WARNING",
                RELAYDESK_HEARTBEAT_DIR=str(directory / "heartbeats"),
                # Redis outlives the test: this deployment's keys and streams are its own.
                RELAYDESK_LOGIN_ATTEMPTS_PREFIX=f"relaydesk-test:{deployment}:login",
                RELAYDESK_COMPACTION_STREAM=f"relaydesk-test:{deployment}:compaction",
                WHATSAPP_CLOUD_API_BASE=graph_base,
                WHATSAPP_CLOUD_VERIFY_TOKEN="verify-token-for-tests",
                WHATSAPP_CLOUD_APP_SECRET=CLOUD_APP_SECRET,
                WHATSAPP_CLOUD_ACCESS_TOKEN=ACCESS_TOKEN,
                WHATSAPP_CLOUD_PHONE_NUMBER_ID=PHONE_NUMBER_ID,
            )
            migrated = subprocess.run(
                [*COMMAND, "migrate"], env=env, capture_output=True, text=True, timeout=120
            )
            assert migrated.returncode == 0, migrated.stderr
            ports = (free_port(), free_port())
            gateway_env = {
                **env,
                "RELAYDESK_RUN_BACKGROUND": "false",
                "RELAYDESK_TRUSTED_PROXIES": PROXY_ADDRESS,
                "RELAYDESK_HOST": "127.0.0.1",
            }
            for number, port in enumerate(ports, start=1):
                processes.start(
                    f"gateway{number}", ["serve"], {**gateway_env, "RELAYDESK_PORT": str(port)}
                )
            processes.start("background", ["background"], env)
            processes.start("worker", ["worker", "--count", "2"], env)
            gateways = tuple(f"http://127.0.0.1:{port}" for port in ports)
            async with asyncio.timeout(START_TIMEOUT_S):
                for gateway in gateways:
                    while not await _healthy(gateway):
                        processes.check_alive()
                        await asyncio.sleep(0.1)
            nginx = LocalNginx(
                directory / "nginx", free_port(), [f"127.0.0.1:{port}" for port in ports]
            )
            await stack.enter_async_context(nginx)
            yield Topology(nginx.url, gateways, env, graph, logs)
            processes.check_alive()
    finally:
        await processes.stop()
        await drop_database(url)
