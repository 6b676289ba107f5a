"""`relaydesk bench reply` at a tiny size: the JSON shape, every message answered, compaction
done only where the worker runs, and the jobs it had to do left over where it does not."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import pytest

from devtools.bench.reply import ReplyOptions, run_reply_bench
from gateway.cli import main
from tests.support.databases import (
    POSTGRES_URL,
    REDIS_URL,
    postgres_reachable,
    redis_reachable,
    unavailable,
)

# Serial: a benchmark: its figures are timings (and Redis databases 14-15 are its own).
pytestmark = pytest.mark.serial

CUSTOMERS = 2
MESSAGES = 4  # the first of each customer is a warm-up, left out of the figures
# The benchmark's worker consumes the one compaction stream of its Redis database: a database of
# its own keeps the jobs of other tests running at the same time out of it, and its jobs out of
# their consumers.
BENCH_REDIS_URL = urlsplit(REDIS_URL)._replace(path="/14").geturl()


async def test_reply_bench_at_a_tiny_size() -> None:
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable(BENCH_REDIS_URL)),
    ):
        if why is not None:
            unavailable(what, why)
    options = ReplyOptions(
        customers=CUSTOMERS,
        messages=MESSAGES,
        think_s=0.2,  # shorter pauses than the command's, to keep the test quick
        postgres_url=POSTGRES_URL,
        redis_url=BENCH_REDIS_URL,
    )
    progress: list[str] = []
    started = time.monotonic()
    result = await run_reply_bench(options, progress.append)
    assert time.monotonic() - started < 120, progress

    figures = json.loads(result.json_line())
    assert set(figures) == {"without", "with", "p50_ratio", "p99_ratio", "compactions"}
    without, with_ = figures["without"], figures["with"]
    for phase in (without, with_):
        assert set(phase) == {"p50_ms", "p99_ms", "ack_p99_ms", "replies", "compactions", "jobs"}
        assert 0 < phase["p50_ms"] <= phase["p99_ms"]
        # The acknowledgement is part of each reply's wait, so its percentiles are lower.
        assert 0 < phase["ack_p99_ms"] <= phase["p99_ms"]
        assert phase["replies"] == CUSTOMERS * (MESSAGES - 1)
    # No worker: the episodes crossed the threshold, jobs were queued, nothing was compacted.
    assert without["compactions"] == 0
    assert without["jobs"] > 0
    # The worker compacted the same customers' episodes while they were talking.
    assert with_["compactions"] > 0
    assert figures["compactions"] == with_["compactions"]
    assert figures["p50_ratio"] == pytest.approx(with_["p50_ms"] / without["p50_ms"], abs=2e-3)
    assert figures["p99_ratio"] == pytest.approx(with_["p99_ms"] / without["p99_ms"], abs=2e-3)
    rows = result.table().splitlines()
    assert rows[3].startswith("not running") and rows[3].split()[-1] == "0"
    assert rows[4].startswith("running") and rows[4].split()[-1] == str(with_["compactions"])
    assert rows[5].startswith("with / without")


def test_reply_bench_refuses_a_single_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "reply", "--messages", "1"]) == 2
    assert "warm-up" in capsys.readouterr().err
