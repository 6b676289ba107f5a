"""The heartbeat of the processes with no port, and `relaydesk health background|worker`
reading it: fresh while the loop turns, stale when it is stuck, absent once stopped."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from gateway.cli import main
from gateway.runtime.heartbeat import beating, heartbeat_path, read_pulse


async def test_a_turning_loop_keeps_the_file_fresh_and_a_stuck_one_lets_it_go_stale(
    tmp_path: Path,
) -> None:
    path = heartbeat_path(tmp_path / "beats", "worker")
    async with beating(path, every_s=0.05):
        assert read_pulse(path, stale_after_s=0.5).fresh
        await asyncio.sleep(0.6)  # several beats: still fresh
        assert read_pulse(path, stale_after_s=0.5).fresh
        time.sleep(0.7)  # the loop is stuck: no beat
        stale = read_pulse(path, stale_after_s=0.5)
        assert not stale.fresh and "stale after" in stale.detail
        await asyncio.sleep(0.2)  # turning again
        assert read_pulse(path, stale_after_s=0.5).fresh
    missing = read_pulse(path)
    assert not missing.fresh and "no heartbeat" in missing.detail


def _health(role: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["health", role, *args])
    return code, capsys.readouterr().out


def test_the_health_command_exits_non_zero_unless_the_heartbeat_is_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELAYDESK_HEARTBEAT_DIR", str(tmp_path))
    code, out = _health("background", capsys)
    assert code == 1 and "unhealthy, no heartbeat" in out

    path = heartbeat_path(tmp_path, "background")
    path.touch()
    code, out = _health("background", capsys)
    assert code == 0 and out.startswith("relaydesk background: healthy")
    # The worker's file is its own.
    assert _health("worker", capsys)[0] == 1

    old = time.time() - 45
    os.utime(path, (old, old))
    code, out = _health("background", capsys)
    assert code == 1 and "last beat 45 s ago (stale after 30 s)" in out
    assert _health("background", capsys, "--max-age", "60")[0] == 0
