"""Keeping values the customer has corrected out of other episodes' recalled lines and summaries.

When a fact is superseded ("Corrigindo: minha chave Pix na verdade é …"), the facts slice shows
the current value — but a line recalled verbatim from an earlier episode, or a summary sentence,
may still carry the old one, and a model given both may act on the wrong one (the next Pix goes
to the old key). Such lines are left out of what other episodes contribute; the episode being
answered keeps its own turns whole (the correction is there, beside the value it corrects).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from context.inputs import SummaryItem
from context.tokens import TokenCounter

__all__ = ["MIN_STALE_CHARS", "mentions_stale", "without_stale"]

# Shorter values ("sim", a two-digit number) would match unrelated words.
MIN_STALE_CHARS = 4


def _usable(values: Iterable[str]) -> tuple[str, ...]:
    return tuple({v.casefold() for v in values if len(v.strip()) >= MIN_STALE_CHARS})


def mentions_stale(text: str, stale: Sequence[str]) -> bool:
    """Whether ``text`` carries one of the ``stale`` values (case folded)."""
    folded = text.casefold()
    return any(value in folded for value in _usable(stale))


def without_stale(
    item: SummaryItem, stale: Sequence[str], counter: TokenCounter
) -> SummaryItem | None:
    """``item`` without its lines that carry a stale value (None when no line is left); the
    item itself when none does."""
    values = _usable(stale)
    if not values:
        return item
    lines = item.text.split("\n")
    kept = [line for line in lines if not any(value in line.casefold() for value in values)]
    if len(kept) == len(lines):
        return item
    if not any(line.strip() for line in kept):
        return None
    text = "\n".join(kept)
    return replace(item, text=text, tokens=counter.count(text))
