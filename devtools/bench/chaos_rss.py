"""The resident memory of the gateway's processes during the chaos run: sampled every
`SAMPLE_S` from ``/proc/<pid>/status`` (Linux), and its growth over the fault-free soak as a
least-squares slope in MB per minute — over the whole soak and over its last two thirds, where
the caches filled at the start weigh less."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.bench.chaos_records import Phase, RssSample

SAMPLE_S = 10.0


def rss_mb(pid: int) -> float | None:
    """The resident set of process ``pid`` in MB (None when it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return None


async def sample_every(
    pids: Callable[[], Mapping[str, int]], samples: list[RssSample], period_s: float = SAMPLE_S
) -> None:
    """Append one sample per process named by ``pids()`` (role → pid) every ``period_s``,
    until cancelled."""
    while True:
        now = time.perf_counter()
        for process, pid in pids().items():
            found = rss_mb(pid)
            if found is not None:
                samples.append(RssSample(now, process, found))
        await asyncio.sleep(period_s)


def slope_mb_per_min(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, MB) points, in MB per minute; None for fewer than
    two distinct times."""
    if len(points) < 2:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    return 60.0 * sum((t - mean_t) * (y - mean_y) for t, y in points) / spread


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    process: str
    first_mb: float
    last_mb: float
    peak_mb: float
    soak_slope: float | None  # MB/min over the soak
    soak_tail_slope: float | None  # MB/min over the soak's last two thirds


def memory(samples: Sequence[RssSample], soak: Phase | None) -> tuple[MemoryFigures, ...]:
    """Per process (in the order first sampled): its first, last and peak RSS over the run and
    its growth over the soak."""
    by_process: dict[str, list[RssSample]] = {}
    for sample in samples:
        by_process.setdefault(sample.process, []).append(sample)
    figures = []
    for process, series in by_process.items():
        in_soak = [(s.at, s.rss_mb) for s in series if soak is not None and soak.holds(s.at)]
        tail_from = soak.start + (soak.end - soak.start) / 3 if soak is not None else 0.0
        figures.append(
            MemoryFigures(
                process=process,
                first_mb=series[0].rss_mb,
                last_mb=series[-1].rss_mb,
                peak_mb=max(s.rss_mb for s in series),
                soak_slope=slope_mb_per_min(in_soak),
                soak_tail_slope=slope_mb_per_min([p for p in in_soak if p[0] >= tail_from]),
            )
        )
    return tuple(figures)
