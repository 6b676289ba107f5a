"""Two `relaydesk serve` processes on one PostgreSQL database and Redis count together: new web
chat visitor ids from one client address, asked of either process in turn, stop at the
tenant's limit (60 an hour by default) on both, with 429 and `Retry-After`."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path

import aiohttp
import pytest

from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    require_postgres_and_redis,
)
from tests.support.processes import COMMAND, clean_env, free_port
from tests.support.stack import WEBCHAT_SECRET

# Serial: two server processes.
pytestmark = pytest.mark.serial

LIMIT = 60  # the default (tests/gateway/test_tenants.py checks it still is)


@asynccontextmanager
async def _database() -> AsyncIterator[str]:
    await require_postgres_and_redis()
    url = await create_database()
    try:
        yield url
    finally:
        await drop_database(url)


@contextmanager
def _serving(env: dict[str, str], port: int, log: Path) -> Iterator[None]:
    with log.open("w") as output:
        server = subprocess.Popen(
            [*COMMAND, "serve", "--port", str(port)],
            env=env,
            cwd=log.parent,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            yield
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


async def _until_up(http: aiohttp.ClientSession, base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            async with http.get(f"{base}/healthz") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientConnectionError:
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"{base} did not start:\n{log.read_text()}")


async def _refused(http: aiohttp.ClientSession, base: str) -> str:
    async with http.get(f"{base}/metrics") as response:
        text = await response.text()
    return next(
        line
        for line in text.splitlines()
        if line.startswith('relaydesk_rate_limited_total{door="visitor_ids"}')
    )


async def test_visitor_ids_from_one_address_stop_at_the_limit_across_two_processes(
    tmp_path: Path,
) -> None:
    async with _database() as url:
        env = clean_env(
            RELAYDESK_DATABASE_URL=url,
            RELAYDESK_REDIS_URL=REDIS_URL,
            RELAYDESK_WEBCHAT_SECRET=WEBCHAT_SECRET,
            RELAYDESK_RUN_COMPACTION="false",
            RELAYDESK_LOG_LEVEL="WARNING",
        )
        migrated = subprocess.run(
            [*COMMAND, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert migrated.returncode == 0, migrated.stderr
        ports = [free_port(), free_port()]
        bases = [f"http://127.0.0.1:{port}" for port in ports]
        logs = [tmp_path / f"gateway-{n}.log" for n in range(2)]
        with ExitStack() as running:
            for port, log in zip(ports, logs, strict=True):
                running.enter_context(_serving(env, port, log))
            async with aiohttp.ClientSession() as http:
                for base, log in zip(bases, logs, strict=True):
                    await _until_up(http, base, log)
                for n in range(LIMIT):  # alternately, as a load balancer would spread them
                    async with http.post(f"{bases[n % 2]}/webchat/visitors") as response:
                        assert response.status == 201, await response.text()
                for base in bases:
                    async with http.post(f"{base}/webchat/visitors") as response:
                        assert response.status == 429, await response.text()
                        assert (await response.json())["error"] == "rate_limited"
                        assert 3500 <= int(response.headers["Retry-After"]) <= 3600
                for base in bases:
                    assert (await _refused(http, base)).endswith(" 1.0")
