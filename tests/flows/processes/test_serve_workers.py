"""`relaydesk serve --workers N --background M`: several real gateway processes on one port,
and several background processes beside them."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import COMMAND, alive, clean_env, free_port, nice_of
from tests.support.serve_workers import instances_answering, serve_workers

# Serial: several `relaydesk serve` processes on one port.
pytestmark = pytest.mark.serial


async def test_two_gateway_and_two_background_processes_run_and_stop_on_sigterm(
    tmp_path: Path,
) -> None:
    async with serve_workers(tmp_path, workers=2, background=2) as served:
        instances = await instances_answering(served.port, at_least=40, deadline_s=60)
        # Two gateway processes answer; the parent only supervises.
        assert len(instances) == 2, (instances, served.output())
        # Beside them, two background processes at a lower CPU priority (nice 10), on no port.
        children = served.children()
        assert len(children.gateways) == 2 and len(children.background) == 2, children
        assert {nice_of(pid) for pid in children.gateways} == {0}
        assert served.process.poll() is None

        served.process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = await asyncio.to_thread(served.process.wait, 10)
        assert time.monotonic() - started < 10
        assert code == 0, served.output()
        for pid in children.gateways | children.background:  # the children are gone too
            assert not alive(pid), pid


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
