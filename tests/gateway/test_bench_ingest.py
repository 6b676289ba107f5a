"""`relaydesk bench ingest` at a tiny rate: the JSON shape, nothing lost, nothing duplicated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.databases import (
    POSTGRES_URL,
    REDIS_URL,
    postgres_reachable,
    redis_reachable,
    unavailable,
)

SCRIPT = Path(sys.executable).with_name("relaydesk")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gateway.cli"]
KEYS = {"acked_per_s", "p50_ms", "p99_ms", "lost", "duplicated", "bare_per_s", "ratio_to_bare"}


async def test_ingest_bench_at_a_tiny_rate(tmp_path: Path) -> None:
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable()),
    ):
        if why is not None:
            unavailable(what, why)
    result = subprocess.run(
        [
            *COMMAND,
            "bench",
            "ingest",
            "--json",
            "--rates",
            "20",
            "--seconds",
            "1",
            "--postgres-url",
            POSTGRES_URL,
            "--redis-url",
            REDIS_URL,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(figures) == KEYS
    assert figures["lost"] == 0
    assert figures["duplicated"] == 0
    assert figures["acked_per_s"] > 0
    assert figures["bare_per_s"] > 0
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
    assert "database check" in result.stdout
    # Replies go to the benchmark's fake Twilio, as in production (here: at least the warm-up's).
    replies = next(line for line in result.stdout.splitlines() if line.startswith("replies: "))
    assert int(replies.split()[1]) > 0
    # Each burst is settled before the next: everything stored is answered by the end.
    stored = next(line for line in result.stdout.splitlines() if line.startswith("database check"))
    assert replies.split()[1] == stored.split()[2]
    assert ", 0 turns still pending" in replies
    assert "settled s" in result.stdout
    assert "gen ms/req" in result.stdout
