"""The room a turn's tool results share: the budget's ``tool_results`` tokens, spent result by
result in the order the calls ran. A result past the room is cut to what is left (with a
visible mark; nothing left: only the mark), and the cut is counted, so the turn's report says
what the model was not shown — never a silent cut."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from context.tokens import TokenCounter

__all__ = ["RESULTS_CUT_MARK", "ResultRoom"]

RESULTS_CUT_MARK: Final = " […] (cut: the turn's room for tool results is spent)"


@dataclass(frozen=True, slots=True)
class ResultRoom:
    """``budget`` tokens for the turn's results; ``used`` so far by ``results`` results, of
    which ``cut`` were cut and ``cut_tokens`` tokens left out."""

    budget: int
    used: int = 0
    results: int = 0
    cut: int = 0
    cut_tokens: int = 0

    def fit(self, content: str, counter: TokenCounter) -> tuple[str, ResultRoom]:
        """``content`` as it fits in the room left, and the room after it."""
        tokens = counter.count(content)
        left = self.budget - self.used
        if tokens <= left:
            return content, replace(self, used=self.used + tokens, results=self.results + 1)
        mark = counter.count(RESULTS_CUT_MARK)
        keep = max(0, left - mark)
        head, _, _ = counter.truncate(content, keep, 0) if keep else ("", "", 0)
        kept = head + RESULTS_CUT_MARK
        spent = min(self.budget, self.used + counter.count(kept))
        return kept, replace(
            self,
            used=spent,
            results=self.results + 1,
            cut=self.cut + 1,
            cut_tokens=self.cut_tokens + tokens - counter.count(head),
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "budget": self.budget,
            "tokens": self.used,
            "results": self.results,
            "cut": self.cut,
            "cut_tokens": self.cut_tokens,
        }
