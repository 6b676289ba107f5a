"""Phone numbers and e-mail addresses a customer writes in free text ("my number is …").

What is found here is only ever an *asserted* claim (`identity.observe(..., stated=...)`).

Not every address or number in a message is the customer's: a Pix key is a payment fact, and
it is very often an e-mail address, a phone number or a CPF ("minha chave Pix é
ana@example.com"). A value counts as the customer's contact unless the text introduces it as a
payment key. The cue word nearest to the value, in its sentence, decides:

- the nearest cue before it ("minha chave Pix é …", "meu e-mail é …", "my pix key is …"), so
  "minha chave Pix é o meu e-mail, ana@…" is a contact (the customer says it is theirs);
- else the nearest cue after it, before any other value ("ana@… é a minha chave Pix");
- no cue at all: a contact, as before ("sou eu, +55 11 99876-5432").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

import phonenumbers

from identity.normalize import DEFAULT_REGION

__all__ = ["stated_values"]

_EMAIL: Final = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_MAX_FOUND: Final = 10
_I: Final = re.IGNORECASE

# What a value is said to be. Longer phrasings first, so "chave pix" is one cue, not two.
_PAYMENT_CUE: Final = re.compile(
    r"\b(?:chaves?\s+(?:d[aeo]s?\s+)?pix|chaves?\s+de\s+pagamento|pix\s+keys?"
    r"|payment\s+keys?|chaves?|pix)\b",
    _I,
)
_CONTACT_CUE: Final = re.compile(
    r"\b(?:e-?\s?mails?|endere[çc]o\s+eletr[ôo]nico|telefones?|celular(?:es)?|cel|fones?|tel"
    r"|whats(?:app)?|zap|n[úu]meros?|phone|mobile|cell(?:phone)?|number|contatos?|contacts?)\b",
    _I,
)
# A cue further than this from its value is about something else.
_CUE_BEFORE_CHARS: Final = 80
_CUE_AFTER_CHARS: Final = 40
# Sentences end at . ! ? ; followed by a space, or at a line break (values are masked first, so
# the dots inside an e-mail address never end one).
_SENTENCE_END: Final = re.compile(r"[.!?;](?=\s|$)|\n")

CueKind = Literal["payment", "contact"]


@dataclass(frozen=True, slots=True)
class _Found:
    value: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Cue:
    kind: CueKind
    start: int
    end: int


def stated_values(text: str, *, region: str | None = DEFAULT_REGION) -> tuple[str, ...]:
    """The phone numbers (E.164) and e-mails in `text`, in order, at most ten; values the text
    introduces as a Pix or payment key are left out (see the module docstring)."""
    found = _values(text, region)
    masked = _masked(text, found)
    cues = _cues(masked)
    ends = [m.end() for m in _SENTENCE_END.finditer(masked)]
    starts = sorted(value.start for value in found)
    kept: list[str] = []
    for value in found:
        following = next((start for start in starts if start > value.start), len(text))
        if _said_to_be(value, cues, ends, following) != "payment":
            kept.append(value.value)
    return tuple(dict.fromkeys(kept))[:_MAX_FOUND]


def _values(text: str, region: str | None) -> list[_Found]:
    """E-mails, then phones, each in text order."""
    emails = [_Found(m.group(0), m.start(), m.end()) for m in _EMAIL.finditer(text)]
    phones = [
        _Found(
            phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164),
            m.start,
            m.end,
        )
        for m in phonenumbers.PhoneNumberMatcher(text, region or "ZZ")
        if not any(m.start < e.end and e.start < m.end for e in emails)
    ]
    return emails + phones


def _masked(text: str, found: list[_Found]) -> str:
    """`text` with every value blanked out, so a cue word inside an address ("ana.pix@…") or a
    dot inside one is not read as the text around it."""
    chars = list(text)
    for value in found:
        chars[value.start : value.end] = "#" * (value.end - value.start)
    return "".join(chars)


def _cues(masked: str) -> list[_Cue]:
    cues = [_Cue("payment", m.start(), m.end()) for m in _PAYMENT_CUE.finditer(masked)]
    cues += [_Cue("contact", m.start(), m.end()) for m in _CONTACT_CUE.finditer(masked)]
    return sorted(cues, key=lambda c: c.start)


def _said_to_be(value: _Found, cues: list[_Cue], ends: list[int], following: int) -> CueKind | None:
    sentence_start = max((end for end in ends if end <= value.start), default=0)
    sentence_end = min((end for end in ends if end > value.end), default=following)
    before = [
        c
        for c in cues
        if sentence_start <= c.start
        and c.end <= value.start
        and value.start - c.end <= _CUE_BEFORE_CHARS
    ]
    if before:
        return before[-1].kind
    after = [
        c
        for c in cues
        if value.end <= c.start
        and c.end <= min(sentence_end, following)
        and c.start - value.end <= _CUE_AFTER_CHARS
    ]
    return after[0].kind if after else None
