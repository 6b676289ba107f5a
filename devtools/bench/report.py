"""Results of the context benchmark: the printed table and the one-line JSON summary.

Headline ratios compare builders like for like: ``ours_build_window`` (the window builder given
what storage loaded, as `trim_messages` is given the history) is "ours". The storage-backed
build (`assemble_context`) and `POST /v1/context` are reported beside it, with their ratios.
``speedup_vs_trim_messages_10k`` = trim_messages median ÷ ours at 10k messages and
``flatness_100k_over_1k`` = ours at 100k ÷ ours at 1k. Targets: ≥ 100 and ≤ 1.5.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from devtools.bench.measure import Timing

METHODS: tuple[tuple[str, str], ...] = (
    ("ours_assemble_sqlite", "ours: assemble_context, SQLite"),
    ("ours_assemble_postgres", "ours: assemble_context, PostgreSQL"),
    ("ours_build_window", "ours: build_window only"),
    ("trim_messages", "LangChain trim_messages"),
    ("naive", "naive re-tokenizing builder"),
    ("e2e_sqlite", "POST /v1/context, SQLite"),
    ("e2e_postgres", "POST /v1/context, PostgreSQL"),
)
HEADLINE = "ours_build_window"
SPEEDUP_TARGET = 100.0
FLATNESS_TARGET = 1.5
SPEEDUP_SIZE = 10_000
FLAT_LOW, FLAT_HIGH = 1_000, 100_000


@dataclass(slots=True)
class SizeResult:
    """Everything measured for one history size."""

    size: int
    episodes: int
    history_tokens: int
    timings: dict[str, Timing] = field(default_factory=dict)
    windows: dict[str, int] = field(default_factory=dict)  # tokens of the window each built
    turns_loaded: int | None = None  # current-episode turns our build read from storage

    def record(self, method: str, timing: Timing) -> None:
        self.timings[method] = timing

    def median(self, method: str) -> float | None:
        timing = self.timings.get(method)
        return timing.median_ms if timing else None


@dataclass(frozen=True, slots=True)
class BenchResult:
    sizes: tuple[int, ...]
    results: tuple[SizeResult, ...]
    input_budget: int
    window: int
    encoding: str
    langchain_core: str
    repeat: int
    baseline_repeats: dict[int, int]
    postgres_skipped: str | None
    populate_seconds: dict[str, float]

    def median(self, size: int, method: str) -> float | None:
        for result in self.results:
            if result.size == size:
                return result.median(method)
        return None

    def speedup(self, method: str = HEADLINE) -> float | None:
        """trim_messages median ÷ ``method`` median at 10k messages."""
        return _ratio(self.median(SPEEDUP_SIZE, "trim_messages"), self.median(SPEEDUP_SIZE, method))

    def flatness(self, method: str = HEADLINE) -> float | None:
        """``method`` at 100k ÷ ``method`` at 1k."""
        return _ratio(self.median(FLAT_HIGH, method), self.median(FLAT_LOW, method))

    def to_json(self) -> dict[str, Any]:
        speedup, flatness = self.speedup(), self.flatness()
        return {
            "sizes": list(self.sizes),
            "medians_ms": {
                str(r.size): {name: _round(r.median(name)) for name, _ in METHODS}
                for r in self.results
            },
            "speedup_vs_trim_messages_10k": _round(speedup),
            "flatness_100k_over_1k": _round(flatness, 3),
            "ours": HEADLINE,
            "build_window_speedup_vs_trim_messages_10k": _round(self.speedup("ours_build_window")),
            "build_window_flatness_100k_over_1k": _round(self.flatness("ours_build_window"), 3),
            "postgres_speedup_vs_trim_messages_10k": _round(self.speedup("ours_assemble_postgres")),
            "postgres_flatness_100k_over_1k": _round(self.flatness("ours_assemble_postgres"), 3),
            "targets": {
                "speedup_vs_trim_messages_10k": {
                    "target": f">= {SPEEDUP_TARGET:g}",
                    "value": _round(speedup),
                    "met": None if speedup is None else speedup >= SPEEDUP_TARGET,
                },
                "flatness_100k_over_1k": {
                    "target": f"<= {FLATNESS_TARGET:g}",
                    "value": _round(flatness, 3),
                    "met": None if flatness is None else flatness <= FLATNESS_TARGET,
                },
            },
            "window_tokens": {str(r.size): dict(r.windows) for r in self.results},
            "history_tokens": {str(r.size): r.history_tokens for r in self.results},
            "episodes": {str(r.size): r.episodes for r in self.results},
            "input_budget": self.input_budget,
            "window": self.window,
            "encoding": self.encoding,
            "langchain_core": self.langchain_core,
            "repeat": self.repeat,
            "baseline_repeat": {str(size): n for size, n in self.baseline_repeats.items()},
            "postgres_skipped": self.postgres_skipped,
            "populate_seconds": self.populate_seconds,
        }

    def json_line(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    def table(self) -> str:
        sizes = self.sizes
        label_width = max(len(label) for _, label in METHODS) + 2
        head = "median ms per call".ljust(label_width) + "".join(f"{s:>12,}" for s in sizes)
        lines = [
            f"relaydesk bench context — one customer per size; window {self.window}, input "
            f"budget {self.input_budget} tokens; {self.encoding}; langchain-core "
            f"{self.langchain_core}",
            f"repeats: ours and e2e {self.repeat}; trim_messages/naive "
            + ", ".join(f"{n} at {s:,}" for s, n in self.baseline_repeats.items()),
            "",
            head,
            "-" * len(head),
        ]
        for name, label in METHODS:
            row = "".join(f"{_ms(self.median(size, name)):>12}" for size in sizes)
            lines.append(label.ljust(label_width) + row)
        lines.append("-" * len(head))
        by_size = {r.size: r for r in self.results}
        extra: list[tuple[str, list[str]]] = [
            ("episodes", [f"{by_size[s].episodes}" for s in sizes]),
            ("history tokens", [f"{by_size[s].history_tokens:,}" for s in sizes]),
            ("turns read by ours", [_int(by_size[s].turns_loaded) for s in sizes]),
        ]
        for name, label in (
            (HEADLINE, "window tokens: ours"),
            ("trim_messages", "window tokens: trim_messages"),
            ("naive", "window tokens: naive"),
        ):
            extra.append((label, [_int(by_size[s].windows.get(name)) for s in sizes]))
        for label, cells in extra:
            lines.append(label.ljust(label_width) + "".join(f"{c:>12}" for c in cells))
        lines.append("")
        lines.extend(self._ratio_lines())
        if self.postgres_skipped:
            lines.append(f"PostgreSQL skipped: {self.postgres_skipped}")
        return "\n".join(lines)

    def _ratio_lines(self) -> list[str]:
        lines = [
            '"ours" in the targets = build_window, like for like with trim_messages (both get '
            "the loaded history); with storage reads it is assemble_context."
        ]
        rows = (
            ("ours (build_window)", HEADLINE, True),
            ("assemble_context, SQLite", "ours_assemble_sqlite", False),
            ("assemble_context, PostgreSQL", "ours_assemble_postgres", False),
        )
        for label, method, headline in rows:
            speedup, flatness = self.speedup(method), self.flatness(method)
            if speedup is None and flatness is None:
                continue
            lines.append(
                f"{label}: trim_messages ÷ ours at 10k = {_times(speedup)}"
                + (f" (target ≥ {SPEEDUP_TARGET:g}×: {_met(speedup, True)})" if headline else "")
                + f"; 100k ÷ 1k = {_plain(flatness)}"
                + (f" (target ≤ {FLATNESS_TARGET:g}: {_met(flatness, False)})" if headline else "")
            )
        return lines


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def _int(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _times(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}×"


def _plain(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _met(value: float | None, at_least: bool) -> str:
    if value is None:
        return "not measured"
    ok = value >= SPEEDUP_TARGET if at_least else value <= FLATNESS_TARGET
    return "met" if ok else "NOT met"
