"""The chaos run (`relaydesk bench chaos`) in a short form: customers writing at a steady rate
through every fault in turn — a background process and a gateway process of `serve` killed
(-9), Redis stopped, the compaction worker frozen, PostgreSQL crashed — with a short recovery
after each, on a private PostgreSQL cluster and Redis. After the settle nothing acknowledged
is lost, nothing is stored or answered twice, every message is answered, in order, and every
send the gateway made is recorded.

The whole report (phases, recoveries, restarts) is the assertion's message, so a failure shows
which checks failed and how the run went.
"""

from __future__ import annotations

import os

import pytest

from devtools.bench.chaos import FAULTS, ChaosOptions, run_chaos_bench
from devtools.private_servers import postgres_missing, redis_missing
from tests.support.databases import unavailable

# Serial: several server processes killed and stopped on purpose, with timings. Opt-in: the
# run takes five to seven minutes; `RELAYDESK_TEST_CHAOS=1` runs it.
pytestmark = [
    pytest.mark.serial,
    pytest.mark.skipif(
        os.environ.get("RELAYDESK_TEST_CHAOS") != "1",
        reason="the chaos run is opt-in (RELAYDESK_TEST_CHAOS=1): it takes five to seven minutes",
    ),
]

# A rate the box keeps up with when shared (its backlog would read as unanswered messages);
# after a kill the gap starts once serve runs again.
SHORT = ChaosOptions(
    rate=5.0,
    customers=60,
    warmup_s=10.0,
    soak_s=20.0,
    fault_gap_s=5.0,
    settle_s=90.0,
)


@pytest.mark.timeout(480)
async def test_under_every_fault_nothing_is_lost_repeated_unanswered_or_reordered() -> None:
    for what, why in (
        ("a private PostgreSQL cluster", postgres_missing()),
        ("a private redis-server", redis_missing()),
    ):
        if why is not None:
            unavailable(what, why)
    progress: list[str] = []
    result = await run_chaos_bench(SHORT, progress.append)
    report = "\n".join([*progress, result.table()])
    assert [fault.name for fault in result.timeline.faults] == list(FAULTS), report
    assert result.checks.acknowledged == result.checks.offered > 0, report
    assert result.checks.failures() == {}, report
    assert result.settle_s is not None, report
