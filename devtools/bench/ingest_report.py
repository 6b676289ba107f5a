"""What ``relaydesk bench ingest`` reports (`devtools.bench.ingest` measures it): each burst's
figures (`RateResult`), one pass over the rates against one gateway (`SideResult`), and the whole
run (`IngestResult`): its per-rate tables, the before | after comparison and the JSON line.

Beside the acknowledgement latencies and the settled pace, each burst carries the CPU it cost
(`devtools.bench.process_cpu`), from its first due request until every one of its messages was
stored and answered: the gateway's process tree (``serve``, its workers and background
processes), and every PostgreSQL and Redis server process, per acknowledged message. The
servers are shared with the rest of the machine, so their figures are differences over that
window and include whatever else used them meanwhile.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_SENDERS = 500
WORKERS = 2
P99_TARGET_MS = 100.0
BEFORE, AFTER = "before", "after"


@dataclass(frozen=True, slots=True)
class RateResult:
    target: int
    sent: int
    acked: int
    errors: int
    elapsed_s: float
    p50_ms: float
    p99_ms: float
    generator_cpu_s: float = 0.0  # CPU the load generator itself used for this rate
    # After the burst, until every message of it was stored and answered (-1: not within the
    # bound); the background work's pace on this box.
    settle_s: float = 0.0
    # CPU seconds from the burst's first due request until it settled: the gateway's process
    # tree, every PostgreSQL and every Redis server process (0 where there is no /proc).
    gateway_cpu_s: float = 0.0
    postgres_cpu_s: float = 0.0
    redis_cpu_s: float = 0.0

    @property
    def acked_per_s(self) -> float:
        return self.acked / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def settled_per_s(self) -> float:
        """Messages stored and answered per second: the burst's acknowledged messages over the
        time from its first due request until all were stored and answered (0: not settled
        within the bound)."""
        if self.settle_s < 0:
            return 0.0
        took = self.elapsed_s + self.settle_s
        return self.acked / took if took > 0 else 0.0

    @property
    def generator_ms_per_request(self) -> float:
        return 1000.0 * self.generator_cpu_s / self.sent if self.sent else 0.0

    @property
    def cpu_ms_per_message(self) -> float:
        """The gateway's CPU (workers and background processes) per acknowledged message."""
        return self._per_message_ms(self.gateway_cpu_s)

    @property
    def postgres_cpu_ms_per_message(self) -> float:
        return self._per_message_ms(self.postgres_cpu_s)

    @property
    def redis_cpu_ms_per_message(self) -> float:
        return self._per_message_ms(self.redis_cpu_s)

    def _per_message_ms(self, cpu_s: float) -> float:
        return 1000.0 * cpu_s / self.acked if self.acked else 0.0

    @property
    def within_target(self) -> bool:
        return self.errors == 0 and self.p99_ms < P99_TARGET_MS


@dataclass(frozen=True, slots=True)
class SideResult:
    """One pass over the rates against one gateway source tree, and its database check."""

    rates: tuple[RateResult, ...]
    lost: int
    duplicated: int
    stored: int
    replies_sent: int = 0
    turns_pending: int = 0
    inbox_left: int = 0  # acknowledged, durable, still waiting to be stored as messages

    def at(self, rate: int) -> RateResult:
        return next(r for r in self.rates if r.target == rate)


def within_target(runs: Sequence[SideResult], rate: int) -> bool:
    """No errors at `rate` in any of `runs`, and their median p99 under the target (one noisy
    round on a shared box does not decide)."""
    bursts = [run.at(rate) for run in runs]
    p99 = _median([b.p99_ms for b in bursts])
    return all(b.errors == 0 for b in bursts) and p99 < P99_TARGET_MS


def chosen_rate(*sides: Sequence[SideResult]) -> int:
    """The highest rate within target (`within_target`) over each side's runs, else the
    highest rate: the burst whose figures are reported (one side's, or compared)."""
    rates = [r.target for r in sides[0][0].rates]
    within = [rate for rate in rates if all(within_target(runs, rate) for runs in sides)]
    return max(within) if within else max(rates)


# The figures compared side by side: label, value of a burst, digits.
_FIGURES: tuple[tuple[str, Callable[[RateResult], float], int], ...] = (
    ("settled/s", lambda r: r.settled_per_s, 1),
    ("acked/s", lambda r: r.acked_per_s, 1),
    ("p50 ms", lambda r: r.p50_ms, 1),
    ("p99 ms", lambda r: r.p99_ms, 1),
    ("settled s", lambda r: r.settle_s, 1),
    ("gw ms/msg", lambda r: r.cpu_ms_per_message, 2),
    ("pg ms/msg", lambda r: r.postgres_cpu_ms_per_message, 2),
    ("redis ms/msg", lambda r: r.redis_cpu_ms_per_message, 2),
)
_LABEL_WIDTH = max(len(label) for label, _, _ in _FIGURES)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class IngestResult:
    """``runs[AFTER]`` (this tree) and, with a baseline, ``runs[BEFORE]``: one `SideResult` per
    round. A side's figures are the medians over its rounds of its `chosen_rate` burst; the
    comparison takes the burst of the rate chosen over both sides' rounds, the same for both."""

    runs: Mapping[str, tuple[SideResult, ...]]
    bare: RateResult
    seconds: float
    senders: int = DEFAULT_SENDERS
    background: int = 1  # background processes asked for (a tree without the option runs one)
    background_before: int = 1  # what the "before" side ran

    @property
    def chosen(self) -> RateResult:
        """This tree's reported burst (its first round's, with several rounds)."""
        return self.runs[AFTER][0].at(chosen_rate(self.runs[AFTER]))

    @property
    def chosen_within_target(self) -> bool:
        return within_target(self.runs[AFTER], self.chosen.target)

    @property
    def lost(self) -> int:
        return sum(run.lost for runs in self.runs.values() for run in runs)

    @property
    def duplicated(self) -> int:
        return sum(run.duplicated for runs in self.runs.values() for run in runs)

    def median(self, side: str, figure: Callable[[RateResult], float], rate: int) -> float:
        """The median over the side's rounds of `figure` of its `rate` burst."""
        return _median([figure(run.at(rate)) for run in self.runs[side]])

    def table(self) -> str:
        rounds = len(self.runs[AFTER])
        lines = [
            f"signed Twilio webhooks from {self.senders} senders, {WORKERS} gateway processes + "
            f"{self.background} background process{'es' if self.background > 1 else ''}"
            + (
                f" (before: {self.background_before})"
                if BEFORE in self.runs and self.background_before != self.background
                else ""
            )
            + " + "
            f"PostgreSQL + Redis, offline model, {self.seconds:g} s per rate, "
            f"{os.cpu_count()} CPUs" + (f", {rounds} rounds" if rounds > 1 else ""),
        ]
        for side in (BEFORE, AFTER):
            for number, run in enumerate(self.runs.get(side, ()), start=1):
                label = side if len(self.runs) > 1 else ""
                if rounds > 1:
                    label = f"{label} round {number}".strip()
                lines.extend(_side_table(run, label))
        lines.extend(_rate_lines([self.bare], bare=True)[1:])
        why = (
            f"highest rate with p99 < {P99_TARGET_MS:g} ms and no errors"
            if self.chosen_within_target
            else f"no rate kept p99 < {P99_TARGET_MS:g} ms without errors: highest rate"
        )
        if rounds > 1:
            why += " by the median round; medians of the rounds"
        lines.append(f"figures at {self.chosen.target}/s ({why})")
        if BEFORE in self.runs:
            lines.extend(self._comparison())
        for side, runs in self.runs.items():
            prefix = f"{side}: " if len(self.runs) > 1 else ""
            stored = sum(run.stored for run in runs)
            lost = sum(run.lost for run in runs)
            duplicated = sum(run.duplicated for run in runs)
            lines.append(
                f"{prefix}database check: {stored} user messages kept, "
                f"{lost} lost, {duplicated} duplicated"
            )
            inbox_left = sum(run.inbox_left for run in runs)
            if inbox_left:
                lines.append(
                    f"{prefix}inbox: {inbox_left} acknowledged messages still waiting to be "
                    "stored (durable, stored after a restart)"
                )
            lines.append(
                f"{prefix}replies: {sum(run.replies_sent for run in runs)} sent to the fake "
                f"Twilio while the gateway ran, {sum(run.turns_pending for run in runs)} turns "
                "still pending when it stopped (answered after a restart)"
            )
        lines.append(
            "settled s: after each burst, until all of its messages were stored and answered "
            "(the next rate starts on a settled system); settled/s: the burst's messages over "
            "burst + settled s"
        )
        lines.append("gen ms/req: CPU of the load generator (same machine) per request")
        lines.append(
            "gw, pg, redis ms/msg: CPU per acknowledged message of the gateway's processes, of "
            "every postgres and of every redis-server process (shared: all their work), from "
            "each burst's first request until it settled"
        )
        lines.append(
            f"bare aiohttp ceiling at {self.bare.target}/s: {self.bare.acked_per_s:.1f}/s, "
            f"ratio {self.ratio_to_bare:.3f}"
        )
        return "\n".join(lines)

    def _comparison(self) -> list[str]:
        rounds = len(self.runs[AFTER])
        sides = [self.runs[BEFORE], self.runs[AFTER]]
        rate = chosen_rate(*sides)
        within = all(within_target(runs, rate) for runs in sides)
        which = (
            "the highest rate within target on both sides"
            if within
            else "no rate within target on both sides: the highest rate"
        )
        what = f"medians of {rounds} rounds" if rounds > 1 else "one round each"
        lines = [
            f"before | after at {rate}/s ({which}; {what}):",
            f"{'':>{_LABEL_WIDTH}} {'before':>9} {'after':>9} {'ratio':>7}",
        ]
        for label, figure, digits in _FIGURES:
            before = self.median(BEFORE, figure, rate)
            after = self.median(AFTER, figure, rate)
            ratio = f"{after / before:.2f}" if before > 0 else "-"
            lines.append(
                f"{label:>{_LABEL_WIDTH}} {before:>9.{digits}f} {after:>9.{digits}f} {ratio:>7}"
            )
        return lines

    @property
    def ratio_to_bare(self) -> float:
        bare = self.bare.acked_per_s
        acked = self.median(AFTER, lambda r: r.acked_per_s, self.chosen.target)
        return acked / bare if bare > 0 else 0.0

    def _figures(self, side: str) -> dict[str, float]:
        rate = chosen_rate(self.runs[side])
        return {
            "settled_per_s": round(self.median(side, lambda r: r.settled_per_s, rate), 1),
            "acked_per_s": round(self.median(side, lambda r: r.acked_per_s, rate), 1),
            "p50_ms": round(self.median(side, lambda r: r.p50_ms, rate), 2),
            "p99_ms": round(self.median(side, lambda r: r.p99_ms, rate), 2),
            "cpu_ms_per_message": round(self.median(side, lambda r: r.cpu_ms_per_message, rate), 3),
            "postgres_cpu_ms_per_message": round(
                self.median(side, lambda r: r.postgres_cpu_ms_per_message, rate), 3
            ),
            "redis_cpu_ms_per_message": round(
                self.median(side, lambda r: r.redis_cpu_ms_per_message, rate), 3
            ),
            "lost": sum(run.lost for run in self.runs[side]),
            "duplicated": sum(run.duplicated for run in self.runs[side]),
        }

    def json_line(self) -> str:
        figures: dict[str, object] = {
            **self._figures(AFTER),
            "bare_per_s": round(self.bare.acked_per_s, 1),
            "ratio_to_bare": round(self.ratio_to_bare, 3),
            "background": self.background,
        }
        if BEFORE in self.runs:
            figures["before"] = self._figures(BEFORE)
        return json.dumps(figures)


def _side_table(run: SideResult, label: str) -> list[str]:
    lines = _rate_lines(run.rates, bare=False)
    if label:
        lines[0] = f"{lines[0]}  [{label}]"
    return lines


# The columns of a gateway's burst, blank on the bare handler's row: header, width.
_GATEWAY_COLUMNS = (
    ("settled s", 9),
    ("settled/s", 9),
    ("gw ms/msg", 9),
    ("pg ms/msg", 9),
    ("redis ms/msg", 12),
)


def _gateway_cells(r: RateResult) -> tuple[str, ...]:
    return (
        f"{r.settle_s:.1f}" if r.settle_s >= 0 else "no",
        f"{r.settled_per_s:.1f}",
        f"{r.cpu_ms_per_message:.2f}",
        f"{r.postgres_cpu_ms_per_message:.2f}",
        f"{r.redis_cpu_ms_per_message:.2f}",
    )


def _rate_lines(rates: Sequence[RateResult], *, bare: bool) -> list[str]:
    lines = [
        f"{'rate/s':>9} {'sent':>7} {'acked/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}"
        f" {'gen ms/req':>10} "
        + " ".join(f"{header:>{width}}" for header, width in _GATEWAY_COLUMNS)
    ]
    for r in rates:
        label = f"bare {r.target}" if bare else f"{r.target}"
        cells = ("",) * len(_GATEWAY_COLUMNS) if bare else _gateway_cells(r)
        line = (
            f"{label:>9} {r.sent:>7} {r.acked_per_s:>9.1f} {r.p50_ms:>8.1f} "
            f"{r.p99_ms:>8.1f} {r.errors:>7} {r.generator_ms_per_request:>10.2f} "
            + " ".join(
                f"{cell:>{width}}" for cell, (_, width) in zip(cells, _GATEWAY_COLUMNS, strict=True)
            )
        )
        lines.append(line.rstrip())
    return lines
