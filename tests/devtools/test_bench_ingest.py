"""`relaydesk bench ingest` at a tiny rate: the JSON shape, nothing lost, nothing duplicated,
the CPU a message cost; the settled pace, the CPU per message and the before | after comparison
computed from known rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.bench.harness import clean_env
from devtools.bench.ingest import (
    THIS_TREE,
    IngestBenchError,
    _Gateway,
    _order,
    _with_cpu,
    sender_numbers,
    verify_source,
)
from devtools.bench.ingest_report import (
    AFTER,
    BEFORE,
    IngestResult,
    RateResult,
    SideResult,
    chosen_rate,
)
from devtools.bench.process_cpu import CpuSample
from tests.support.databases import (
    POSTGRES_URL,
    REDIS_URL,
    postgres_reachable,
    redis_reachable,
    unavailable,
)

# Serial: a benchmark: `relaydesk serve` processes under a timed load.
pytestmark = pytest.mark.serial

SCRIPT = Path(sys.executable).with_name("relaydesk")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gateway.cli"]
KEYS = {
    "settled_per_s",
    "acked_per_s",
    "p50_ms",
    "p99_ms",
    "cpu_ms_per_message",
    "postgres_cpu_ms_per_message",
    "redis_cpu_ms_per_message",
    "lost",
    "duplicated",
    "bare_per_s",
    "ratio_to_bare",
    "background",
}


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
            "--senders",
            "3",
            "--background",
            "2",
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
    assert figures["background"] == 2 and "2 background processes" in result.stdout
    assert figures["lost"] == 0
    assert figures["duplicated"] == 0
    assert figures["acked_per_s"] > 0
    assert 0 < figures["settled_per_s"] <= figures["acked_per_s"]
    assert figures["bare_per_s"] > 0
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
    # The gateway's processes and PostgreSQL did work for every burst. Redis's share of a
    # 20-message burst can be under one clock tick (10 ms) of /proc's accounting: measured, not 0
    # by construction, but not asserted above 0.
    assert figures["cpu_ms_per_message"] > 0
    assert figures["postgres_cpu_ms_per_message"] > 0
    assert figures["redis_cpu_ms_per_message"] >= 0
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
    header = next(line for line in result.stdout.splitlines() if line.lstrip().startswith("rate/s"))
    assert header.split()[-6:] == ["gw", "ms/msg", "pg", "ms/msg", "redis", "ms/msg"]
    assert "gw, pg, redis ms/msg: CPU per acknowledged message" in result.stdout


def _rate(
    target: int, *, p99_ms: float, settle_s: float, acked: int = 1000, cpu_s: float = 0.0
) -> RateResult:
    """A burst whose gateway used `cpu_s`, PostgreSQL half of it and Redis a tenth."""
    return RateResult(
        target=target,
        sent=acked,
        acked=acked,
        errors=0,
        elapsed_s=acked / target,
        p50_ms=p99_ms / 2,
        p99_ms=p99_ms,
        settle_s=settle_s,
        gateway_cpu_s=cpu_s,
        postgres_cpu_s=cpu_s / 2,
        redis_cpu_s=cpu_s / 10,
    )


def _side(*rates: RateResult) -> SideResult:
    return SideResult(rates=rates, lost=0, duplicated=0, stored=sum(r.acked for r in rates))


def test_settled_pace_counts_the_burst_and_its_settling() -> None:
    rate = _rate(1000, p99_ms=50.0, settle_s=9.0)  # 1,000 messages: 1 s of burst, 9 s after
    assert rate.settled_per_s == 100.0
    assert _rate(1000, p99_ms=50.0, settle_s=-1.0).settled_per_s == 0.0  # never settled


def test_cpu_per_message_divides_each_process_group_by_the_acknowledged_messages() -> None:
    rate = RateResult(
        target=500,
        sent=520,
        acked=500,
        errors=20,
        elapsed_s=1.0,
        p50_ms=5.0,
        p99_ms=9.0,
        gateway_cpu_s=1.5,
        postgres_cpu_s=0.5,
        redis_cpu_s=0.1,
    )
    assert rate.cpu_ms_per_message == pytest.approx(3.0)
    assert rate.postgres_cpu_ms_per_message == pytest.approx(1.0)
    assert rate.redis_cpu_ms_per_message == pytest.approx(0.2)
    nothing = RateResult(
        target=500, sent=5, acked=0, errors=5, elapsed_s=1.0, p50_ms=0, p99_ms=0, gateway_cpu_s=1
    )
    assert nothing.cpu_ms_per_message == 0.0  # no message acknowledged: no figure


def test_a_burst_carries_the_cpu_used_between_its_two_samples() -> None:
    burst = _rate(250, p99_ms=20.0, settle_s=1.0, acked=250)
    before = CpuSample(gateway_s=10.0, postgres_s=100.0, redis_s=50.0)
    after = CpuSample(gateway_s=10.75, postgres_s=100.25, redis_s=50.05)
    measured = _with_cpu(burst, before, after)
    assert measured.gateway_cpu_s == pytest.approx(0.75)
    assert measured.postgres_cpu_s == pytest.approx(0.25)
    assert measured.redis_cpu_s == pytest.approx(0.05)
    assert measured.cpu_ms_per_message == pytest.approx(3.0)
    assert _with_cpu(burst, None, after) == burst  # no /proc: no figure
    assert _with_cpu(burst, before, None) == burst


def test_each_side_reports_its_largest_burst_within_target_and_both_compare_at_one() -> None:
    before = _side(
        _rate(250, p99_ms=20.0, settle_s=1.5, acked=250, cpu_s=1.0),
        _rate(1000, p99_ms=40.0, settle_s=19.0, cpu_s=3.0),
    )
    after = _side(
        _rate(250, p99_ms=20.0, settle_s=1.0, acked=250, cpu_s=0.5),
        _rate(1000, p99_ms=150.0, settle_s=4.0, cpu_s=2.0),
    )
    result = IngestResult(
        runs={BEFORE: (before,), AFTER: (after,)},
        bare=_rate(1000, p99_ms=5.0, settle_s=0.0),
        seconds=1.0,
        senders=10,
    )
    # A side that missed the target at 1,000/s keeps the comparison at 250/s, whatever the
    # other side's p99 (never their median together).
    assert chosen_rate([before]) == 1000 and chosen_rate([before], [after]) == 250
    figures = json.loads(result.json_line())
    # After: 1,000/s missed the p99 target, so its figures are those of 250/s (250 in 2 s).
    assert figures["settled_per_s"] == 125.0
    assert figures["before"]["settled_per_s"] == 50.0  # 1,000 in 1 + 19 s
    # CPU per message of the same bursts: after 0.5 s over 250, before 3 s over 1,000.
    assert figures["cpu_ms_per_message"] == 2.0
    assert figures["postgres_cpu_ms_per_message"] == 1.0
    assert figures["redis_cpu_ms_per_message"] == 0.2
    assert figures["before"]["cpu_ms_per_message"] == 3.0
    assert figures["before"]["postgres_cpu_ms_per_message"] == 1.5
    assert figures["before"]["redis_cpu_ms_per_message"] == 0.3
    # Side by side, the same burst: 250/s, the largest within target on both sides.
    table = result.table()
    assert "before | after at 250/s" in table
    settled = next(line for line in table.splitlines() if line.split()[:1] == ["settled/s"])
    assert settled.split() == ["settled/s", "100.0", "125.0", "1.25"]
    compared = {
        " ".join(line.split()[:2]): line.split()[2:]
        for line in table.splitlines()
        if "ms/msg" in line and len(line.split()) == 5
    }
    # At 250/s: before 1 s over 250 (4 ms), after 0.5 s (2 ms); PostgreSQL half, Redis a tenth.
    assert compared == {
        "gw ms/msg": ["4.00", "2.00", "0.50"],
        "pg ms/msg": ["2.00", "1.00", "0.50"],
        "redis ms/msg": ["0.40", "0.20", "0.50"],
    }
    # Each side's per-rate table: the 1,000/s row of "after" ends with its three figures.
    rows = [line.split() for line in table.splitlines() if line.split()[:2] == ["1000", "1000"]]
    assert rows[-1][-3:] == ["2.00", "1.00", "0.20"]
    assert rows[0][-3:] == ["3.00", "1.50", "0.30"]  # before's


def test_with_rounds_the_median_round_decides_what_is_within_target() -> None:
    good = _side(
        _rate(250, p99_ms=20.0, settle_s=1.0, acked=250), _rate(1000, p99_ms=50.0, settle_s=9.0)
    )
    spiked = _side(
        _rate(250, p99_ms=20.0, settle_s=3.0, acked=250), _rate(1000, p99_ms=160.0, settle_s=9.0)
    )
    assert chosen_rate([good]) == 1000
    assert chosen_rate([good, spiked]) == 250  # median p99 (50 + 160) / 2: over the target
    assert chosen_rate([good, spiked, good]) == 1000  # one noisy round of three
    result = IngestResult(
        runs={AFTER: (spiked, good, spiked)}, bare=_rate(1000, p99_ms=5.0, settle_s=0.0), seconds=1
    )
    assert json.loads(result.json_line())["settled_per_s"] == 62.5  # 250/s: 62.5, 125, 62.5


def test_rounds_alternate_which_side_goes_first_and_senders_are_distinct() -> None:
    assert _order([AFTER, BEFORE], 0) == [BEFORE, AFTER]
    assert _order([AFTER, BEFORE], 1) == [AFTER, BEFORE]
    assert _order([AFTER], 1) == [AFTER]
    assert len(set(sender_numbers(500))) == 500


async def test_a_side_runs_only_the_gateway_of_its_own_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "gateway").mkdir(parents=True)
    (tree / "gateway" / "__init__.py").write_text("")
    (tree / "gateway" / "cli.py").write_text("")
    for gateway in (_Gateway(tree), _Gateway(THIS_TREE)):
        await verify_source(gateway, clean_env(**gateway.env), tmp_path)
    gone = _Gateway(tmp_path / "removed")  # a baseline removed meanwhile: not the installed one
    with pytest.raises(IngestBenchError, match="imports from"):
        await verify_source(gone, clean_env(**gone.env), tmp_path)


def test_a_baseline_tree_without_the_background_option_runs_its_one_process(
    tmp_path: Path,
) -> None:
    from devtools.bench.ingest import THIS_TREE, _Gateway

    old = tmp_path / "old"
    (old / "gateway").mkdir(parents=True)
    (old / "gateway" / "cli.py").write_text('serve.add_argument("--workers")\n')
    assert "--background" not in _Gateway(old).serve(8080, 2)
    assert _Gateway(THIS_TREE).serve(8080, 2)[-2:] == ["--background", "2"]
    assert "--background" not in _Gateway(THIS_TREE).serve(8080, 1)
