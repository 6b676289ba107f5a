"""The LoCoMo evaluation's table and its one-line JSON summary."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from devtools.eval.run import ALL_METHODS, CATEGORIES, Outcome

__all__ = ["CATEGORY_NAMES", "EmbeddingCost", "EvalReport", "summarize"]

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _figures(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    judged = [o.covered for o in outcomes if o.covered is not None]
    return {
        "n": len(outcomes),
        "evidence_coverage": round(sum(judged) / len(judged), 3) if judged else None,
        "answer_in_window": (
            round(sum(o.answer_in_window for o in outcomes) / len(outcomes), 3)
            if outcomes
            else None
        ),
        "tokens_median": statistics.median(o.tokens for o in outcomes) if outcomes else None,
        "token_ratio_to_full": (
            round(statistics.median(o.tokens / o.full_tokens for o in outcomes), 4)
            if outcomes
            else None
        ),
    }


def _by_method(outcomes: Sequence[Outcome], methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    return {method: _figures([o for o in outcomes if o.method == method]) for method in methods}


@dataclass(frozen=True, slots=True)
class EmbeddingCost:
    """What hybrid recall's vectors cost a run: seconds spent reading and computing them, and
    how many were computed and how many came from the disk cache."""

    seconds: float
    computed: int
    cached: int


@dataclass(frozen=True, slots=True)
class EvalReport:
    split: str
    window: int
    overall: dict[str, dict[str, Any]]
    by_category: dict[str, dict[str, dict[str, Any]]]
    seconds: float
    embedding: EmbeddingCost | None = None  # None: no hybrid recall in the run

    def table(self) -> str:
        head = (
            f"LoCoMo, split {self.split}, window {self.window} "
            f"(categories 1-4; {self.seconds:.0f} s)"
        )
        if self.embedding is not None:
            head += (
                f"; vectors {self.embedding.seconds:.0f} s, "
                f"{self.embedding.computed} computed, {self.embedding.cached} from the cache"
            )
        rows = [
            head,
            f"{'slice':<18} {'method':<10} {'n':>5} {'evidence':>9} {'answer':>7} "
            f"{'tokens':>8} {'ratio':>7}",
        ]
        sections = [("overall", self.overall)] + [
            (f"{key} {CATEGORY_NAMES[int(key)]}", value) for key, value in self.by_category.items()
        ]
        for name, methods in sections:
            for method, figures in methods.items():
                rows.append(
                    f"{name:<18} {method:<10} {figures['n']:>5} "
                    f"{_cell(figures['evidence_coverage'], 3):>9} "
                    f"{_cell(figures['answer_in_window'], 3):>7} "
                    f"{_cell(figures['tokens_median'], 0):>8} "
                    f"{_cell(figures['token_ratio_to_full'], 3):>7}"
                )
        return "\n".join(rows)

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "window": self.window,
            "overall": self.overall,
            "by_category": self.by_category,
            **({"embedding": asdict(self.embedding)} if self.embedding is not None else {}),
        }

    def json_line(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), sort_keys=False)


def _cell(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def summarize(
    outcomes: Sequence[Outcome],
    *,
    split: str,
    window: int,
    seconds: float = 0.0,
    embedding: EmbeddingCost | None = None,
) -> EvalReport:
    """The figures of the methods present in ``outcomes``, overall and by category."""
    present = {o.method for o in outcomes}
    methods = [method for method in ALL_METHODS if method in present]
    return EvalReport(
        split=split,
        window=window,
        overall=_by_method(outcomes, methods),
        by_category={
            str(category): _by_method([o for o in outcomes if o.category == category], methods)
            for category in CATEGORIES
        },
        seconds=seconds,
        embedding=embedding,
    )
