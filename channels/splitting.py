"""Long replies cut into the parts a channel accepts, one rule for every channel.

A provider caps one message by some length: Twilio counts characters, Telegram UTF-16 code
units. `split_message` cuts where a reader expects a break, at the last one in the second half
of the part, in this order of preference: a paragraph break, a line break, a sentence end (the
punctuation stays with the first part), a word boundary; only where there is none, a hard cut
at the limit (between two characters, never inside one).

The parts are slices of the stripped text, in order; only the white space at each cut is
dropped, so joined back they give the text's words in order.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Length = Callable[[str], int]

_PARAGRAPH = re.compile(r"\n[^\S\n]*\n")
_LINE = re.compile(r"\n")
# The punctuation ending a sentence, when white space follows it: the cut comes after it.
_SENTENCE = re.compile(r"[.!?…](?=\s)")
_SPACE = re.compile(r"\s")


def utf16_units(text: str) -> int:
    """The length of `text` in UTF-16 code units (a character past U+FFFF counts 2)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def split_message(text: str, limit: int, length: Length = len) -> list[str]:
    """`text` in parts of at most `limit` by `length`, cut at the best break (module
    docstring); no part is empty or starts or ends with white space, and blank text has none.

    `length` must add up over characters, each of them counting at least 1 (as `len` and
    `utf16_units` do). A single character longer than `limit` is a `ValueError`.
    """
    parts: list[str] = []
    rest = text.strip()
    while rest:
        if length(rest) <= limit:
            parts.append(rest)
            break
        fits = _fitting(rest, limit, length)
        if fits == 0:
            raise ValueError(f"a character is longer than the limit of {limit}")
        cut = _best_cut(rest, fits)
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return parts


def _fitting(text: str, limit: int, length: Length) -> int:
    """How many leading characters of `text` fit in `limit` (every character counts >= 1)."""
    low, high = 0, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if length(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def _best_cut(text: str, fits: int) -> int:
    """Where to end the first part: after at most `fits` characters, past the middle."""
    half = fits // 2
    # One character more than fits, so a break just past the limit (a sentence end followed
    # by white space, white space itself) is seen; a cut is never past `fits`.
    probe = text[: fits + 1]
    for pattern, after in ((_PARAGRAPH, False), (_LINE, False), (_SENTENCE, True), (_SPACE, False)):
        cuts = [m.end() if after else m.start() for m in pattern.finditer(probe, half)]
        fitting = [cut for cut in cuts if half < cut <= fits]
        if fitting:
            return fitting[-1]
    return _hard_cut(text, fits)


def _hard_cut(text: str, fits: int) -> int:
    # A str holds code points, so a cut never splits a character; a high and a low surrogate
    # that came in unpaired from JSON still stay together.
    if 1 < fits < len(text) and _high(text[fits - 1]) and _low(text[fits]):
        return fits - 1
    return fits


def _high(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


def _low(char: str) -> bool:
    return "\udc00" <= char <= "\udfff"
