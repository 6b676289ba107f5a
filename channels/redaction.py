"""Card numbers and card security codes out of customer text, before it is stored or shown.

Applied to every inbound text (and a transcript's words) before storage, the context window
and logs. Pure and total: any string in, a `Redaction` out, and redacting twice changes
nothing more.

Card numbers: 13 to 19 digits that pass the Luhn check, written

- contiguously (`4111111111111111`, also glued to letters: `card4111111111111111`);
- in groups separated by a space, dash or dot, card-style: the first group of 4 digits, the
  others of 3 to 6 (`4111 1111 1111 1111`, `3782-822463-10005`, `4111.1111.1111.1`);
- or spoken, as a recognizer writes it: one or two digits at a time (`4 1 1 1 ...`,
  `41 11 11 ...`) or one digit word per digit (`four one one one ...`, `quatro um um um ...`;
  English and Portuguese, with the Brazilian `meia` for six), also between commas. Tens as
  words (`forty-one`, `quarenta e um`), `oh` for zero and `double four` are not read.

Within a sequence of digit groups, the search takes, from the earliest group on, the longest
card-shaped, Luhn-valid stretch and goes on after it, so an extra digit spoken before the
card or an expiry date right after it does not hide the card. Numbers that are not Luhn-
valid, or not shaped like a card, stay: order ids (`PED-4471`), phone numbers (`+55 11
99876-5432`, groups 2-2-5-4, and anything after a `+`), CEPs (`01310-100`), CPFs
(`123.456.789-09`), amounts, dates. A long digit string read out one digit at a time (a
48-digit boleto line) can hold a Luhn-valid stretch by chance and lose it; that is the price
of not leaking a spoken card.

Security codes: a number of 3 or 4 digits (written or spoken) within four words after a
CVV / CVC / CV2 / "security code" / "código de segurança" cue. The search from a cue stops at
the first number of any length or at a redaction marker.

Both become markers: `[card number redacted]`, `[security code redacted]`.

For a transcript, redact the words (`redact_words`) before marking doubtful ones: `redact`
still reads a group marked `4111?`, but not digit words split by an `[unclear: ...]` bracket.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import Field, dataclass, replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

__all__ = [
    "CARD",
    "CARD_MARKER",
    "DIGIT_WORDS",
    "SECURITY_CODE",
    "SECURITY_CODE_MARKER",
    "Redaction",
    "WordRedaction",
    "luhn_valid",
    "redact",
    "redact_words",
]

CARD_MARKER = "[card number redacted]"
SECURITY_CODE_MARKER = "[security code redacted]"
CARD = "card_number"
SECURITY_CODE = "security_code"

DIGIT_WORDS: dict[str, str] = {
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "um": "1",
    "uma": "1",
    "dois": "2",
    "duas": "2",
    "três": "3",
    "tres": "3",
    "quatro": "4",
    "cinco": "5",
    "seis": "6",
    "meia": "6",
    "sete": "7",
    "oito": "8",
    "nove": "9",
}

MAX_WORDS_BEFORE_CODE = 4
_MARKERS = (CARD_MARKER, SECURITY_CODE_MARKER)
_TOKEN = re.compile("|".join(re.escape(m) for m in _MARKERS) + r"|[0-9]+|[^\W\d_]+", re.UNICODE)
# Between the groups of one number: a space, dash, dot or comma — or the `?` with which
# `mark_uncertain` marks a doubtful group, so marked transcript text is still redacted.
_GAP = re.compile(r"\s*[-.,?]?\s*")
# Bounded by "no letter" rather than \b: a digit next to a cue may become a marker, and the
# cue must read the same before and after (idempotence).
_CUE = re.compile(
    r"(?<![^\W\d_])(?:cvv2?|cvc2?|cv2|c\.?\s?v\.?\s?[vc]\.?|(?:card\s+)?security\s+code"
    r"|c[óo]d(?:igo|\.)?\s*(?:de\s+)?seguran[çc]a)(?![^\W\d_])",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text, how many things were replaced, and which kinds (in order found)."""

    text: str
    redacted_count: int
    kinds: tuple[str, ...]


class _Word(Protocol):
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def text(self) -> str: ...


W = TypeVar("W", bound=_Word)


@dataclass(frozen=True, slots=True)
class WordRedaction(Generic[W]):
    """Redacted words: a redacted number's first word carries the marker, the rest are gone."""

    words: tuple[W, ...]
    redacted_count: int
    kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Token:
    start: int
    end: int
    digits: str | None  # None for words and markers
    marker: bool


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    kind: str


def redact(text: str) -> Redaction:
    """`text` with card numbers and security codes replaced by their markers."""
    spans = _find_spans(text)
    out = text
    for span in reversed(spans):
        out = out[: span.start] + _marker(span.kind) + out[span.end :]
    return Redaction(out, len(spans), _kinds(spans))


def redact_words(words: Sequence[W]) -> WordRedaction[W]:
    """Redact across word boundaries: the words forming a number become one word.

    The first word of a redacted number keeps its timing and confidence and gets the marker
    (with any text of that word before the number and of the last word after it); the other
    words of the number are dropped. Works on any frozen dataclass with a `text` field.
    """
    offsets: list[int] = []
    at = 0
    for word in words:
        offsets.append(at)
        at += len(word.text) + 1
    joined = " ".join(w.text for w in words)
    spans = _find_spans(joined)
    out: list[W] = []
    i = 0
    s = 0
    while i < len(words):
        if s < len(spans) and offsets[i] + len(words[i].text) > spans[s].start:
            first = i
            cluster: list[_Span] = []
            while s < len(spans) and (not cluster or spans[s].start < _end(offsets, words, i)):
                cluster.append(spans[s])
                while i + 1 < len(words) and offsets[i + 1] < spans[s].end:
                    i += 1
                s += 1
            region = joined[offsets[first] : _end(offsets, words, i)]
            for span in reversed(cluster):
                a, b = span.start - offsets[first], span.end - offsets[first]
                region = region[:a] + _marker(span.kind) + region[b:]
            out.append(replace(words[first], text=region))
        else:
            out.append(words[i])
        i += 1
    return WordRedaction(tuple(out), len(spans), _kinds(spans))


def _find_spans(text: str) -> list[_Span]:
    """Where card numbers and security codes are in `text`, sorted and disjoint."""
    tokens = [
        _Token(
            m.start(),
            m.end(),
            _digits(m.group()),
            m.group() in _MARKERS,
        )
        for m in _TOKEN.finditer(text)
    ]
    cards = _card_spans(text, tokens)
    codes = _code_spans(text, tokens, cards)
    return sorted(cards + codes, key=lambda s: s.start)


def luhn_valid(digits: str) -> bool:
    """The Luhn (mod 10) check of a string of ASCII digits."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _digits(token: str) -> str | None:
    if token.isascii() and token.isdigit():
        return token
    return DIGIT_WORDS.get(token.casefold())


def _runs(text: str, tokens: Sequence[_Token]) -> Iterable[list[_Token]]:
    """Maximal sequences of digit tokens separated by at most one space/dash/dot/comma."""
    run: list[_Token] = []
    for token in tokens:
        if token.digits is None:
            if run:
                yield run
            run = []
            continue
        if run and not _GAP.fullmatch(text, run[-1].end, token.start):
            yield run
            run = []
        run.append(token)
    if run:
        yield run


def _card_spans(text: str, tokens: Sequence[_Token]) -> list[_Span]:
    spans: list[_Span] = []
    for run in _runs(text, tokens):
        after_plus = _preceded_by_plus(text, run[0].start)
        i = 0
        while i < len(run):
            end = _card_at(run, i) if i > 0 or not after_plus else None
            if end is None:
                i += 1
                continue
            spans.append(_Span(run[i].start, run[end - 1].end, CARD))
            i = end
    return spans


def _preceded_by_plus(text: str, at: int) -> bool:
    """A phone number in international form (`+55 11 ...`), never a card."""
    at -= 1
    while at >= 0 and text[at].isspace():
        at -= 1
    return at >= 0 and text[at] == "+"


def _card_at(run: Sequence[_Token], i: int) -> int | None:
    """The end of the longest card-shaped, Luhn-valid window starting at group `i`."""
    best: int | None = None
    digits = ""
    for j in range(i, len(run)):
        digits += run[j].digits or ""
        if len(digits) > 19:
            break
        if len(digits) >= 13 and _card_shaped(run[i : j + 1]) and luhn_valid(digits):
            best = j + 1
    return best


def _card_shaped(groups: Sequence[_Token]) -> bool:
    sizes = [len(g.digits or "") for g in groups]
    if len(sizes) == 1 or max(sizes) <= 2:
        return True
    return sizes[0] == 4 and all(3 <= n <= 6 for n in sizes[1:-1]) and 1 <= sizes[-1] <= 6


def _code_spans(text: str, tokens: Sequence[_Token], cards: Sequence[_Span]) -> list[_Span]:
    starts = [t.start for t in tokens]
    taken: set[int] = set()  # indices of tokens already inside a redaction
    for card in cards:
        k = bisect_left(starts, card.start)
        while k < len(tokens) and tokens[k].start < card.end:
            taken.add(k)
            k += 1
    spans: list[_Span] = []
    for cue in _CUE.finditer(text):
        if cue.start() > 0 and text.startswith(SECURITY_CODE_MARKER, cue.start() - 1):
            continue  # the words "security code" of our own marker
        k = bisect_left(starts, cue.end())
        words = 0
        while k < len(tokens) and not tokens[k].marker and k not in taken:
            if tokens[k].digits is None:
                words += 1
                if words > MAX_WORDS_BEFORE_CODE:
                    break
                k += 1
                continue
            last = k
            while (
                last + 1 < len(tokens)
                and tokens[last + 1].digits is not None
                and last + 1 not in taken
                and _GAP.fullmatch(text, tokens[last].end, tokens[last + 1].start)
            ):
                last += 1
            if 3 <= sum(len(t.digits or "") for t in tokens[k : last + 1]) <= 4:
                spans.append(_Span(tokens[k].start, tokens[last].end, SECURITY_CODE))
                taken.update(range(k, last + 1))
            break
    return spans


def _end(offsets: Sequence[int], words: Sequence[_Word], i: int) -> int:
    return offsets[i] + len(words[i].text)


def _marker(kind: str) -> str:
    return CARD_MARKER if kind == CARD else SECURITY_CODE_MARKER


def _kinds(spans: Sequence[_Span]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.kind for s in spans))
