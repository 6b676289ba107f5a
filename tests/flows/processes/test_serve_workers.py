"""`relaydesk serve --workers N --background M`: several real gateway processes on one port,
and several background processes beside them."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    postgres_reachable,
    redis_reachable,
    unavailable,
)
from tests.support.processes import COMMAND, clean_env, free_port, nice_of

# Serial: several `relaydesk serve` processes on one port.
pytestmark = pytest.mark.serial


async def _instances_answering(port: int, *, at_least: int, deadline_s: float) -> dict[str, int]:
    """Ask /healthz over a new connection each time until `at_least` requests were answered
    and two distinct processes answered; return instance id -> answers."""
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


async def test_two_gateway_and_two_background_processes_run_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable()),
    ):
        if why is not None:
            unavailable(what, why)
    url = await create_database()
    env = clean_env(
        RELAYDESK_DATABASE_URL=url,
        RELAYDESK_REDIS_URL=REDIS_URL,
        RELAYDESK_RUN_COMPACTION="false",
        RELAYDESK_LOG_LEVEL="WARNING",
    )
    try:
        migrated = subprocess.run(
            [*COMMAND, "migrate"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert migrated.returncode == 0, migrated.stderr
        port = free_port()
        log = (tmp_path / "serve.log").open("w")
        server = subprocess.Popen(
            [*COMMAND, "serve", "--workers", "2", "--background", "2", "--port", str(port)],
            env=env,
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            instances = await _instances_answering(port, at_least=40, deadline_s=60)
            output = (tmp_path / "serve.log").read_text()
            # Two gateway processes answer; the parent only supervises.
            assert len(instances) == 2, (instances, output)
            # Beside them, two background processes at a lower CPU priority, on no port.
            children = _spawned_children(server.pid)
            niceness = {pid: nice_of(pid) for pid in children}
            assert sorted(niceness.values()) == [0, 0, 10, 10], (niceness, output)
            background = [pid for pid, nice in niceness.items() if nice == 10]
            pids = [pid for pid, nice in niceness.items() if nice == 0]
            assert server.poll() is None

            server.send_signal(signal.SIGTERM)
            started = time.monotonic()
            code = await asyncio.to_thread(server.wait, 10)
            assert time.monotonic() - started < 10
            assert code == 0, (tmp_path / "serve.log").read_text()
            for pid in [*pids, *background]:  # the children are gone too
                assert not _alive(pid), pid
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            log.close()
    finally:
        await drop_database(url)


def _spawned_children(parent: int) -> list[int]:
    """The multiprocessing children of `parent` (its resource tracker left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(
    ("command", "refusal"),
    [
        (["serve", "--workers", "2"], "--workers 2 needs PostgreSQL and Redis"),
        (["serve", "--background", "2"], "--background 2 needs PostgreSQL and Redis"),
        (["background"], "relaydesk background needs PostgreSQL and Redis"),
    ],
)
def test_processes_sharing_work_are_refused_on_the_embedded_sqlite_default(
    tmp_path: Path, command: list[str], refusal: str
) -> None:
    result = subprocess.run(
        [*COMMAND, *command],
        env=clean_env(RELAYDESK_PORT=str(free_port())),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert refusal in result.stderr
    assert "RELAYDESK_DATABASE_URL=postgresql+asyncpg://" in result.stderr
    assert "RELAYDESK_REDIS_URL=redis://" in result.stderr
    assert not (tmp_path / "relaydesk.db").exists()  # refused before touching anything
