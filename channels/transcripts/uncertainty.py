"""Transcript text with the doubtful words marked, so whoever reads it weighs them.

A word is doubtful when its confidence is known and below the threshold (default 0.6).
The marking convention:

- one doubtful word: `word?`; the mark goes before trailing punctuation (`camera?.`);
- two or more doubtful words in a row: `[unclear: w1 w2 w3]`, trailing punctuation of the
  last word after the bracket (`[unclear: Let's take that camera].`);
- numbers stay readable: a doubtful word with a digit in it (`4471`, `PED-4471`) is never
  buried in an `[unclear: ...]` run but marked on its own (`4471?`), and a number spoken
  digit by digit (`4 4 7 1`, one digit per word, up to a sentence end) is one number,
  written together and marked (`4471?`) when any of its digits is doubtful, left exactly as
  it was when all are sure;
- words of unknown confidence, punctuation alone and bracketed markers
  (`[card number redacted]`) are never marked.

Nothing else changes: confident words are reproduced as given, joined by single spaces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from channels.transcripts.model import TranscriptSegment

DEFAULT_THRESHOLD = 0.6

_TRAILING = re.compile(r"^(.*?)([.,;:!?…)\]}\"'»”’]*)$", re.DOTALL)
_DIGIT = re.compile(r"[0-9]")
_MARKER = re.compile(r"\[[^\[\]]*\]")
_DIGIT_RUN_CONTINUES = ("", ",", "-")


class ScoredWord(Protocol):
    """Anything with display text and a confidence: `TranscriptWord`, `channels.base.Word`."""

    @property
    def text(self) -> str: ...

    @property
    def confidence(self) -> float | None: ...


@dataclass(frozen=True, slots=True)
class _Unit:
    plain: str  # as given
    core: str  # without trailing punctuation (digits joined for a spoken number)
    trailing: str
    kind: Literal["word", "number", "fixed"]
    doubtful: bool


def mark_uncertain(words: Iterable[ScoredWord], threshold: float = DEFAULT_THRESHOLD) -> str:
    """The words as text, doubtful ones marked by the convention in the module docstring."""
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
    out: list[str] = []
    pending: list[_Unit] = []

    def flush() -> None:
        if len(pending) == 1:
            out.append(f"{pending[0].core}?{pending[0].trailing}")
        elif pending:
            inner = " ".join([u.plain for u in pending[:-1]] + [pending[-1].core])
            out.append(f"[unclear: {inner}]{pending[-1].trailing}")
        pending.clear()

    for unit in _units(list(words), threshold):
        if unit.kind == "word" and unit.doubtful:
            pending.append(unit)
            continue
        flush()
        if unit.kind == "number" and unit.doubtful:
            out.append(f"{unit.core}?{unit.trailing}")
        else:
            out.append(unit.plain)
    flush()
    return " ".join(out)


def rendered_text(segment: TranscriptSegment, threshold: float = DEFAULT_THRESHOLD) -> str:
    """The segment's words marked by `mark_uncertain`; its plain text when it has no words."""
    if segment.words:
        return mark_uncertain(segment.words, threshold)
    return segment.text


def _units(words: Sequence[ScoredWord], threshold: float) -> Iterable[_Unit]:
    i = 0
    while i < len(words):
        text = words[i].text.strip()
        core, trailing = _split(text)
        if _is_digit(core):
            j = i + 1
            while (
                j < len(words)
                and _split(words[j - 1].text.strip())[1] in _DIGIT_RUN_CONTINUES
                and _is_digit(_split(words[j].text.strip())[0])
            ):
                j += 1
            if j - i >= 2:
                run = words[i:j]
                yield _Unit(
                    plain=" ".join(w.text.strip() for w in run),
                    core="".join(_split(w.text.strip())[0] for w in run),
                    trailing=_split(run[-1].text.strip())[1],
                    kind="number",
                    doubtful=any(_doubtful(w, threshold) for w in run),
                )
                i = j
                continue
        i += 1
        if not text:
            continue
        if not core or _MARKER.search(text):
            yield _Unit(text, core, trailing, "fixed", False)
        else:
            kind: Literal["word", "number"] = "number" if _DIGIT.search(core) else "word"
            yield _Unit(text, core, trailing, kind, _doubtful(words[i - 1], threshold))


def _split(text: str) -> tuple[str, str]:
    match = _TRAILING.match(text)
    assert match is not None  # the pattern matches every string
    return match.group(1), match.group(2)


def _is_digit(core: str) -> bool:
    return len(core) == 1 and "0" <= core <= "9"


def _doubtful(word: ScoredWord, threshold: float) -> bool:
    return word.confidence is not None and word.confidence < threshold
