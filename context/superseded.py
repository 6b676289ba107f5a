"""Keeping values the customer has corrected out of other episodes' recalled lines and summaries.

When a fact is superseded ("Corrigindo: minha chave Pix na verdade é …"), the facts slice shows
the current value — but a line recalled verbatim from an earlier episode, or a summary sentence,
may still carry the old one, and a model given both may act on the wrong one (the next Pix goes
to the old key). Such lines are left out of what other episodes contribute; the episode being
answered keeps its own turns whole (the correction is there, beside the value it corrects).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from context.inputs import SummaryItem
from context.tokens import TokenCounter

__all__ = ["MIN_NUMBER_DIGITS", "MIN_STALE_CHARS", "mentions_stale", "without_stale"]

# Shorter values ("sim", a two-digit number) would match unrelated words.
MIN_STALE_CHARS = 4
# A number is matched by its digits, whatever its punctuation, from this many on: a stored
# "+5511987654321" is the "11 98765-4321" the customer typed (phone numbers, CPFs, keys).
MIN_NUMBER_DIGITS = 8

_NUMBER_VALUE = re.compile(r"\+?[\d\s().-]+")
_NUMBER_IN_TEXT = re.compile(r"\+?\d[\d\s().-]*\d")
_NOT_DIGIT = re.compile(r"\D")


@dataclass(frozen=True, slots=True)
class _Stale:
    texts: tuple[str, ...]  # matched as case-folded substrings
    numbers: tuple[str, ...]  # matched by digits: the line's number ends with one, or is its end


def _usable(values: Iterable[str]) -> _Stale:
    texts: set[str] = set()
    numbers: set[str] = set()
    for value in values:
        if len(value.strip()) < MIN_STALE_CHARS:
            continue
        digits = _NOT_DIGIT.sub("", value)
        if _NUMBER_VALUE.fullmatch(value.strip()) and len(digits) >= MIN_NUMBER_DIGITS:
            numbers.add(digits)
        else:
            texts.add(value.casefold())
    return _Stale(tuple(texts), tuple(numbers))


def _same_number(found: str, stale: str) -> bool:
    """One is the other with a prefix (a country or area code) left out."""
    short, long = sorted((found, stale), key=len)
    return len(short) >= MIN_NUMBER_DIGITS and long.endswith(short)


def _carries(line: str, stale: _Stale) -> bool:
    folded = line.casefold()
    if any(value in folded for value in stale.texts):
        return True
    if not stale.numbers:
        return False
    found = (_NOT_DIGIT.sub("", match.group()) for match in _NUMBER_IN_TEXT.finditer(line))
    return any(_same_number(number, value) for number in found for value in stale.numbers)


def mentions_stale(text: str, stale: Sequence[str]) -> bool:
    """Whether ``text`` carries one of the ``stale`` values (case folded; a number by its
    digits)."""
    return _carries(text, _usable(stale))


def without_stale(
    item: SummaryItem, stale: Sequence[str], counter: TokenCounter
) -> SummaryItem | None:
    """``item`` without its lines that carry a stale value (None when no line is left); the
    item itself when none does."""
    values = _usable(stale)
    if not values.texts and not values.numbers:
        return item
    lines = item.text.split("\n")
    kept = [line for line in lines if not _carries(line, values)]
    if len(kept) == len(lines):
        return item
    if not any(line.strip() for line in kept):
        return None
    text = "\n".join(kept)
    return replace(item, text=text, tokens=counter.count(text))
