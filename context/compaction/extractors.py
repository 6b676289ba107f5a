"""Rule-based fact extraction over the text of one message.

The rules themselves are data (``rules.RULES``); this module applies them sentence by sentence:
cue-bound rules first (a Pix key is the value nearest to its "pix"/"chave" cue, after it if any,
else before it), then the others in table order, each skipping spans an earlier rule of the same
claim namespace already took. A fact's scope is the table's scope for its key; nothing in the text
can change it. A sentence that reads as an instruction to a model yields no phrases and no rules
(only identifiers, whose shapes cannot carry an instruction).

Corrections ("errei, a chave certa é …", "actually my email is …") yield the new value tagged
``correction``; which value is current is decided by message order, not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from context.compaction.guard import is_instruction_like
from context.compaction.identifiers import DEFAULT_REGION, mask_identifiers
from context.compaction.rules import CUE_WINDOW, CUES, RULES, Rule
from context.compaction.types import RULE_KEYS, ExtractedFact, SourceMessage
from context.inputs import Role

__all__ = ["Found", "extract_facts", "find_facts", "find_message_facts", "split_sentences"]

# A lowercase word after the mark continues the sentence: that is how a doubtful transcript
# word reads ("o pedido 4471? ainda não chegou"), and how chat often goes on.
_BOUNDARY: Final = re.compile(r"(?<=[.!?…])\s+(?![a-zà-ÿ])|\s*\n+\s*")
_CORRECTION: Final = re.compile(
    r"\b(?:errei|me\s+enganei|corrigindo|corre[çc][ãa]o|na\s+verdade|o\s+certo\s+[ée]"
    r"|a\s+certa\s+[ée]|o\s+correto\s+[ée]|a\s+correta\s+[ée]|quis\s+dizer|actually|correction"
    r"|i\s+meant|sorry,?\s+(?:it'?s|my)|the\s+right\s+one\s+is)\b",
    re.IGNORECASE,
)
_NEGATED: Final = re.compile(
    r"\b(?:n[ãa]o|nunca|jamais|nem|not|never|no\s+longer|don'?t|doesn'?t|didn'?t|can'?t|cannot"
    r"|won'?t|wouldn'?t)\b[^,.;:!?]{0,20}$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Found:
    """An extracted fact and where its value sits in the message text."""

    fact: ExtractedFact
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Hit:
    start: int
    end: int
    order: int
    rule: Rule
    value: str


def split_sentences(text: str) -> Iterator[tuple[int, str]]:
    """``(offset, sentence)`` pairs: splits after ``.!?…`` followed by space and a word that
    does not start in lowercase, and at newlines."""
    position = 0
    for boundary in _BOUNDARY.finditer(text):
        if boundary.start() > position:
            yield position, text[position : boundary.start()]
        position = boundary.end()
    if position < len(text):
        yield position, text[position:]


def _hits(rule: Rule, order: int, sentence: str, region: str) -> Iterator[_Hit]:
    for pattern in rule.patterns:
        for match in pattern.finditer(sentence):
            before = sentence[max(0, match.start() - 40) : match.start()]
            if rule.negatable and _NEGATED.search(before):
                continue
            value = rule.normalize(match, region)
            if not value:
                continue
            if rule.free_text:
                value = mask_identifiers(value, region=region)
            group = "value" if "value" in match.re.groupindex else 0
            yield _Hit(match.start(group), match.end(group), order, rule, value)


def _free(claimed: list[tuple[int, int]], hit: _Hit) -> bool:
    return all(hit.end <= start or hit.start >= end for start, end in claimed)


def _cued(
    group: str,
    rules: Sequence[tuple[int, Rule]],
    sentence: str,
    region: str,
    claimed: dict[str, list[tuple[int, int]]],
) -> Iterator[_Hit]:
    candidates = sorted(
        (hit for order, rule in rules for hit in _hits(rule, order, sentence, region)),
        key=lambda hit: (hit.start, hit.order),
    )
    for cue in CUES[group].finditer(sentence):
        usable = [hit for hit in candidates if _free(claimed[hit.rule.claim or ""], hit)]
        after = [h for h in usable if 0 <= h.start - cue.end() <= CUE_WINDOW]
        before = [h for h in usable if 0 <= cue.start() - h.end <= CUE_WINDOW]
        pick = (
            after[0]
            if after
            else (max(before, key=lambda h: (h.end, -h.order)) if before else None)
        )
        if pick is not None:
            claimed[pick.rule.claim or ""].append((pick.start, pick.end))
            yield pick


def _sentence_hits(sentence: str, role: str, region: str, rules: Sequence[Rule]) -> list[_Hit]:
    question = sentence.rstrip().endswith("?")
    poisoned = is_instruction_like(sentence)
    applicable = [
        (order, rule)
        for order, rule in enumerate(rules)
        if role in rule.roles
        and not (rule.statements_only and question)
        and not (poisoned and (rule.free_text or rule.key in RULE_KEYS))
    ]
    claimed: dict[str, list[tuple[int, int]]] = {rule.claim or "": [] for rule in rules}
    claimed[""] = []
    out: list[_Hit] = []
    groups = list(dict.fromkeys(rule.cue for _, rule in applicable if rule.cue is not None))
    for group in groups:
        members = [(order, rule) for order, rule in applicable if rule.cue == group]
        out.extend(_cued(group, members, sentence, region, claimed))
    for order, rule in applicable:
        if rule.cue is not None:
            continue
        for hit in _hits(rule, order, sentence, region):
            if rule.claim is not None:
                if not _free(claimed[rule.claim], hit):
                    continue
                claimed[rule.claim].append((hit.start, hit.end))
            out.append(hit)
    return out


def find_facts(
    text: str,
    *,
    message_id: int,
    role: Role = "user",
    confidence: float | None = None,
    region: str = DEFAULT_REGION,
    rules: Sequence[Rule] = RULES,
) -> tuple[Found, ...]:
    """Facts stated in ``text``, in text order, one per distinct (key, value).

    ``confidence`` (a transcript's) scales each rule's confidence; ``region`` reads phone
    numbers written without a country code.
    """
    scale = 1.0 if confidence is None else confidence
    found: list[Found] = []
    seen: set[tuple[str, str]] = set()
    for offset, sentence in split_sentences(text):
        correction = ("correction",) if _CORRECTION.search(sentence) else ()
        for hit in sorted(
            _sentence_hits(sentence, role, region, rules), key=lambda h: (h.start, h.order)
        ):
            rule = hit.rule
            if (rule.key, hit.value) in seen:
                continue
            seen.add((rule.key, hit.value))
            fact = ExtractedFact(
                key=rule.key,
                value=hit.value,
                scope=rule.scope,
                source_message_id=message_id,
                confidence=round(rule.confidence * scale, 3),
                tags=(*rule.tags, *correction),
                kind=rule.kind,
            )
            found.append(Found(fact, offset + hit.start, offset + hit.end))
    return tuple(found)


def find_message_facts(
    message: SourceMessage, *, region: str = DEFAULT_REGION, rules: Sequence[Rule] = RULES
) -> tuple[Found, ...]:
    """`find_facts` of ``message``'s text, with its id, role and confidence."""
    return find_facts(
        message.text,
        message_id=message.id,
        role=message.role,
        confidence=message.confidence,
        region=region,
        rules=rules,
    )


def extract_facts(
    message: SourceMessage, *, region: str = DEFAULT_REGION, rules: Sequence[Rule] = RULES
) -> tuple[ExtractedFact, ...]:
    """The facts ``message`` states, each sourced to ``message.id``."""
    return tuple(item.fact for item in find_message_facts(message, region=region, rules=rules))
