"""The chaos run's report: the checks, each phase, each fault's recovery, the processes' memory
and the restarts, as a table and as one JSON object."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from devtools.bench.chaos_checks import Checks, Finding, check, findings
from devtools.bench.chaos_options import ChaosOptions
from devtools.bench.chaos_records import Recorded, Restart
from devtools.bench.chaos_rss import MemoryFigures, memory
from devtools.bench.chaos_timeline import FaultFigures, PhaseFigures, Timeline, timeline

# The checks as the table names them.
_CHECK_LABELS = (
    ("lost", "lost (acknowledged, not kept)"),
    ("duplicated", "duplicated stored"),
    ("unanswered", "unanswered"),
    ("answered_twice", "answered twice"),
    ("unrecorded_sends", "sends unrecorded"),
    ("order_inversions", "order inversions"),
    ("pending_turns", "pending turns after settle"),
)


@dataclass(frozen=True, slots=True)
class Where:
    """How many offences against one check arose in one phase (with one turn state, for the
    unanswered messages and pending turns)."""

    check: str
    phase: str
    detail: str
    count: int


def where(found: Sequence[Finding], recorded: Recorded) -> tuple[Where, ...]:
    """The findings counted by check, phase and detail, in the checks' order."""
    counts = Counter(
        (f.check, recorded.phase_at(f.at) if f.at is not None else None, f.detail) for f in found
    )
    return tuple(
        Where(name, phase or "unknown", detail, count)
        for (name, phase, detail), count in counts.items()
    )


@dataclass(frozen=True, slots=True)
class ChaosResult:
    options: ChaosOptions
    checks: Checks
    timeline: Timeline
    memory: tuple[MemoryFigures, ...]
    restarts: tuple[Restart, ...]
    settle_s: float | None
    begun: float  # the run's first moment, on the records' clock
    where: tuple[Where, ...] = ()
    callbacks: int = 0  # status callbacks posted to the gateway
    callbacks_refused: int = 0  # of them, not accepted (no answer, or not a 2xx)

    @staticmethod
    def of(options: ChaosOptions, recorded: Recorded) -> ChaosResult:
        soak = next((p for p in recorded.phases if p.name == "soak"), None)
        found = findings(recorded)
        return ChaosResult(
            options=options,
            checks=check(recorded, found),
            timeline=timeline(recorded),
            memory=memory(recorded.rss, soak),
            restarts=recorded.restarts,
            settle_s=recorded.settle_s,
            begun=recorded.phases[0].start if recorded.phases else 0.0,
            where=where(found, recorded),
            callbacks=len(recorded.callbacks),
            callbacks_refused=recorded.callbacks_refused,
        )

    def table(self) -> str:
        o, c = self.options, self.checks
        lines = [
            f"chaos: {o.rate:g} messages/s from {o.customers} customers, serve --workers 2 "
            f"--background 2 + relaydesk worker, private PostgreSQL and Redis, {o.model}, "
            f"{os.cpu_count()} CPUs",
            f"  acknowledged {c.acknowledged} of {c.offered} offered "
            f"({c.never_acknowledged} never acknowledged)",
        ]
        lines += [f"  {label:<30} {getattr(c, name):>7}" for name, label in _CHECK_LABELS]
        lines.append(f"  {'inbox rows left / set aside':<30} {c.inbox_left:>7} / {c.set_aside}")
        lines.append(
            f"  {'replies at Twilio':<30} {c.creates:>7} ({c.unmatched_creates} naming none "
            "of the load's messages)"
        )
        lines.append(
            f"  {'status callbacks / refused':<30} {self.callbacks:>7} / "
            f"{self.callbacks_refused} refused (a refused one is not posted again, as with Twilio)"
        )
        settle = (
            f"{self.settle_s:.1f} s"
            if self.settle_s is not None
            else f"not settled within {o.settle_s:g} s"
        )
        lines.append(f"settle: {settle}")
        lines.append(
            f"{'phase':<16} {'s':>6} {'due':>6} {'attempts':>8} {'errors':>6} "
            f"{'ack p99 ms':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
        )
        lines += [_phase_line(p) for p in self.timeline.phases]
        lines.append(
            f"{'fault':<16} {'at s':>6} {'down s':>6} {'errors':>6} {'refused':>7} "
            f"{'webhooks ok s':>13} "
            f"{'replies s':>9} {'restarts':>8}"
        )
        lines += [_fault_line(f) for f in self.timeline.faults]
        lines.append(
            f"{'memory':<16} {'first MB':>8} {'last MB':>8} {'peak MB':>8} "
            f"{'soak MB/min':>11} {'last 2/3 MB/min':>15}"
        )
        lines += [_memory_line(m) for m in self.memory]
        for restart in self.restarts:
            lines.append(
                f"restart: {restart.process} died at {restart.at - self.begun:.1f} s "
                f"(exit {restart.exit_code}), ready after {_seconds(restart.ready_after_s)} s"
            )
        for w in self.where:
            detail = f" ({w.detail})" if w.detail else ""
            lines.append(f"where: {w.check} {w.count} in {w.phase}{detail}")
        failures = c.failures()
        lines.append(
            "FAILED: " + ", ".join(f"{name} {count}" for name, count in failures.items())
            if failures
            else "all checks passed"
        )
        lines.append(
            "ack p99: from a message's due time to its 200, retries included; p50/p99/max: from "
            "its acknowledgement to its reply at Twilio; webhooks ok s / "
            "replies s: from the fault until webhooks succeed again / a message written after "
            "it is answered; refused: failed attempts a running gateway answered with a status "
            "(the others got no answer)"
        )
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps(
            {
                "options": asdict(self.options),
                "checks": asdict(self.checks),
                "failures": self.checks.failures(),
                "settle_s": _round(self.settle_s),
                "callbacks": self.callbacks,
                "callbacks_refused": self.callbacks_refused,
                "phases": [
                    {
                        "name": p.name,
                        "seconds": round(p.seconds, 1),
                        "due": p.due,
                        "attempts": p.attempts,
                        "errors": p.errors,
                        **p.latency_figures(),
                        "max_ms": round(p.max_ms, 1),
                    }
                    for p in self.timeline.phases
                ],
                "faults": [
                    {
                        **asdict(f),
                        "at_s": round(f.at_s, 1),
                        "down_s": round(f.down_s, 1),
                        "webhooks_recovered_s": _round(f.webhooks_recovered_s),
                        "replies_recovered_s": _round(f.replies_recovered_s),
                    }
                    for f in self.timeline.faults
                ],
                "memory": [
                    {key: _round(value) if isinstance(value, float) else value
                     for key, value in asdict(m).items()}
                    for m in self.memory
                ],
                "where": [asdict(w) for w in self.where],
                "restarts": [
                    {
                        "process": r.process,
                        "at_s": round(r.at - self.begun, 1),
                        "exit": r.exit_code,
                        "ready_after_s": _round(r.ready_after_s),
                    }
                    for r in self.restarts
                ],
            }
        )  # fmt: skip


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def _slope(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def _phase_line(p: PhaseFigures) -> str:
    return (
        f"{p.name:<16} {p.seconds:>6.1f} {p.due:>6} {p.attempts:>8} {p.errors:>6} "
        f"{p.ack_p99_ms:>10.0f} {p.p50_ms:>8.0f} {p.p99_ms:>8.0f} {p.max_ms:>8.0f}"
    )


def _fault_line(f: FaultFigures) -> str:
    return (
        f"{f.name:<16} {f.at_s:>6.1f} {f.down_s:>6.1f} {f.errors:>6} {f.refused:>7} "
        f"{_seconds(f.webhooks_recovered_s):>13} {_seconds(f.replies_recovered_s):>9} "
        f"{f.restarts:>8}"
    )


def _memory_line(m: MemoryFigures) -> str:
    return (
        f"{m.process:<16} {m.first_mb:>8.1f} {m.last_mb:>8.1f} {m.peak_mb:>8.1f} "
        f"{_slope(m.soak_slope):>11} {_slope(m.soak_tail_slope):>15}"
    )
