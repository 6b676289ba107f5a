"""Extractive summary of compacted messages: salient sentences, dated, attributed and sourced.

Each message is split into sentences. A sentence scores by how central its words are to the
block (BM25 of the sentence against the terms that recur across messages) plus cues that mark
the things people later ask about: numbers, dates and time words, proper nouns, first-person
statements, the answer to a question, the sentence that stated a fact. Questions and very short
sentences score lower. Each message contributes at most ``per_message`` sentences; the best ones
are taken greedily while the rendered summary stays within ``word_cap`` words, then rendered in
chronological order, one per line: ``[8 May 2023] Caroline: I went to a support group
yesterday. (yesterday = 7 May 2023)``. The date resolves "yesterday" (`context.dates`); the
source id lets an evaluation or an operator trace each line back to its message.

When the episode already has a summary, its sentences compete again with the new ones (with a
small bonus for having been chosen before), so the summary stays capped as the episode grows.
Sentences that read as instructions to a model are never included, and identifiers (e-mail,
phone, CPF/CNPJ, Pix keys, CEP, the ids given in ``mask_values``) are masked: a summary reaches
every window of the customer, facts only the scopes their link allows. Deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from context.compaction.extractors import split_sentences
from context.compaction.guard import is_instruction_like
from context.compaction.identifiers import DEFAULT_REGION, mask_identifiers
from context.compaction.types import SourceMessage, SummarySentence
from context.errors import ContextInputError
from context.relevance import bm25_scores, terms

__all__ = ["DEFAULT_WORD_CAP", "SalienceWeights", "summarize"]

# Set on the LoCoMo dev split: the dated lines ("[8 May 2023]") cost two words more than ISO
# dates did, and 150 keeps about as many sentences as 120 used to.
DEFAULT_WORD_CAP: Final = 150

_TIME: Final = re.compile(
    r"\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|janeiro|fevereiro|mar[çc]o"
    r"|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday|weekend|segunda|ter[çc]a|quarta|quinta|sexta|s[áa]bado"
    r"|domingo|yesterday|today|tonight|tomorrow|ago|last\s+(?:week|month|year|night)"
    r"|next\s+(?:week|month|year)|ontem|hoje|amanh[ãa]|semana\s+passada|m[êe]s\s+passado"
    r"|ano\s+passado|fim\s+de\s+semana|pr[óo]xim[ao]\s+(?:semana|m[êe]s|ano)|(?:19|20)\d\d"
    r"|\d{1,2}/\d{1,2}|\d{1,2}:\d{2}|\d{1,2}\s*(?:am|pm|h)\b)",
    re.IGNORECASE,
)
_FIRST_PERSON: Final = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our|eu|meu|minha|meus|minhas|n[óo]s|nosso"
    r"|nossa|a\s+gente)\b",
    re.IGNORECASE,
)
_NOT_PROPER: Final = frozenset({"i", "i'm", "i've", "i'll", "i'd", "ok"})
# Reactions that carry no content of their own ("Wow, that's cool!", "Obrigada!").
_FILLER: Final = re.compile(
    r"^\W*(?:wow|cool|thanks|thank\s+you|haha\w*|lol|oh|aww+|omg|yay|hey|hi|hello|nice|great"
    r"|awesome|amazing|ok|okay|sure|yeah|yep|yes|no|nope|totally|absolutely|good\s+to\s+see"
    r"|nice\s+to|i\s+(?:totally\s+)?agree|me\s+too|same\s+here|congrat\w*|oi|ol[áa]|obrigad[oa]"
    r"|valeu|legal|beleza|show|nossa|que\s+bom|kk+|rs+|sim|n[ãa]o|t[áa])\b",
    re.IGNORECASE,
)
_WORD_EDGE: Final = ".,;:!?\"'()[]"


@dataclass(frozen=True, slots=True)
class SalienceWeights:
    """Weights of the salience score; ``centrality`` multiplies the BM25 score scaled to [0, 1].

    Defaults were set on the LoCoMo dev split (final summaries of each session, 120 words):
    cues that mark events and their time beat lexical centrality, which over-rewards a topic
    word repeated in small talk.
    """

    centrality: float = 0.3
    number: float = 0.5
    time: float = 1.0
    proper_noun: float = 0.4
    first_person: float = 0.4
    fact: float = 1.0
    answer: float = 0.6
    content: float = 0.3
    carried: float = 0.3
    question: float = -0.8
    short: float = -0.6
    filler: float = -0.4


@dataclass(slots=True)
class _Candidate:
    sentence: SummarySentence
    order: tuple[int, int]
    terms: tuple[str, ...] = field(default_factory=tuple)
    bonus: float = 0.0
    score: float = 0.0


def _clip(text: str, max_words: int) -> str:
    """At most ``max_words`` words; a cut is marked by "…" on the last word kept."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]).rstrip(_WORD_EDGE) + "…"


def _cues(text: str, weights: SalienceWeights, names: frozenset[str]) -> float:
    """Cue bonus of a sentence; ``names`` (the speakers, case-folded) are not proper-noun cues:
    "Thanks, Caroline!" names its addressee, it says nothing about her."""
    words = text.split()
    question = text.rstrip().endswith("?")
    score = 0.0
    if any(ch.isdigit() for ch in text):
        score += weights.number
    if _TIME.search(text):
        score += weights.time
    inner = (word.strip(_WORD_EDGE) for word in words[1:])
    if any(word[:1].isupper() and word.casefold() not in _NOT_PROPER | names for word in inner):
        score += weights.proper_noun
    if len(words) < 8 and _FILLER.search(text):
        score += weights.filler
    if question:
        score += weights.question
    elif _FIRST_PERSON.search(text):
        score += weights.first_person
    if len(words) < 4:
        score += weights.short
    return score


def _speaker(message: SourceMessage) -> str:
    return message.speaker or message.role


def _names(messages: Iterable[SourceMessage]) -> frozenset[str]:
    return frozenset(word.casefold() for m in messages if m.speaker for word in m.speaker.split())


def _new_candidates(
    messages: Sequence[SourceMessage],
    fact_spans: Mapping[int, Sequence[tuple[int, int]]],
    max_sentence_words: int,
    mask_values: Iterable[tuple[str, str]],
    region: str,
    weights: SalienceWeights,
    names: frozenset[str],
) -> list[_Candidate]:
    masks = tuple(mask_values)
    out: list[_Candidate] = []
    for index, message in enumerate(messages):
        previous = messages[index - 1] if index else None
        answers = previous is not None and previous.role != message.role and "?" in previous.text
        spans = fact_spans.get(message.id, ())
        for position, (offset, raw) in enumerate(split_sentences(message.text)):
            if len(raw.split()) < 2 or is_instruction_like(raw):
                continue
            text = mask_identifiers(_clip(raw, max_sentence_words), masks, region)
            bonus = _cues(raw, weights, names)
            if any(start < offset + len(raw) and end > offset for start, end in spans):
                bonus += weights.fact
            if answers and not raw.rstrip().endswith("?"):
                bonus += weights.answer
            sentence = SummarySentence(
                text, message.id, message.created_at.date().isoformat(), _speaker(message)
            )
            out.append(_Candidate(sentence, (message.id, position), terms(raw), bonus))
    return out


def _carried_candidates(
    previous: Sequence[SummarySentence], weights: SalienceWeights, names: frozenset[str]
) -> list[_Candidate]:
    return [
        _Candidate(
            sentence,
            (sentence.source_message_id, -len(previous) + index),
            terms(sentence.text),
            _cues(sentence.text, weights, names) + weights.carried,
        )
        for index, sentence in enumerate(previous)
        if not is_instruction_like(sentence.text)
    ]


def _score(candidates: list[_Candidate], weights: SalienceWeights) -> None:
    by_source: dict[int, set[str]] = {}
    for candidate in candidates:
        by_source.setdefault(candidate.sentence.source_message_id, set()).update(candidate.terms)
    spread: Counter[str] = Counter()
    for words in by_source.values():
        spread.update(words)
    recurring = sorted(term for term, count in spread.items() if count >= 2) or sorted(spread)
    scores = bm25_scores(recurring, [c.terms for c in candidates])
    top = max(scores, default=0.0)
    for candidate, score in zip(candidates, scores, strict=True):
        central = score / top if top > 0 else 0.0
        content = min(1.0, len(set(candidate.terms)) / 8)
        candidate.score = round(
            weights.centrality * central + weights.content * content + candidate.bonus, 6
        )


def _legacy_prefix(previous_summary: str | None, budget: int) -> str:
    """An earlier summary without sourced sentences (e.g. a model's): kept, capped in words."""
    if not previous_summary or budget <= 0 or is_instruction_like(previous_summary):
        return ""
    return _clip(previous_summary, budget)


def summarize(
    messages: Sequence[SourceMessage],
    *,
    previous_sentences: Sequence[SummarySentence] = (),
    previous_summary: str | None = None,
    fact_spans: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    word_cap: int = DEFAULT_WORD_CAP,
    per_message: int = 1,
    max_sentence_words: int = 30,
    mask_values: Iterable[tuple[str, str]] = (),
    region: str = DEFAULT_REGION,
    weights: SalienceWeights = SalienceWeights(),  # noqa: B008 - frozen, shared safely
) -> tuple[str, tuple[SummarySentence, ...]]:
    """The summary text and its sentences (chronological) for ``messages`` (oldest first).

    ``previous_sentences`` are the episode's current summary sentences; when there are none,
    ``previous_summary`` (plain text) is kept as a leading paragraph of at most half the cap.
    ``fact_spans`` maps a message id to the character spans of the accepted facts it stated
    (``(0, len(text))`` marks the whole message); ``mask_values`` pairs
    ``(value, placeholder)`` masked besides the built-in identifiers. The rendered text, counted
    with ``str.split``, never exceeds ``word_cap`` words.
    """
    if word_cap < 0 or per_message < 1 or max_sentence_words < 1:
        raise ContextInputError(
            "invalid_summary_limits",
            f"word_cap {word_cap}, per_message {per_message}, "
            f"max_sentence_words {max_sentence_words}",
        )
    prefix = "" if previous_sentences else _legacy_prefix(previous_summary, word_cap // 2)
    budget = word_cap - len(prefix.split())
    names = _names(messages) | frozenset(
        word.casefold() for s in previous_sentences if s.speaker for word in s.speaker.split()
    )
    candidates = _carried_candidates(previous_sentences, weights, names) + _new_candidates(
        messages, fact_spans or {}, max_sentence_words, mask_values, region, weights, names
    )
    _score(candidates, weights)
    ranked = sorted(candidates, key=lambda c: (-c.score, c.order))
    chosen: list[_Candidate] = []
    per_source: Counter[int] = Counter()
    seen: set[str] = set()
    used = 0
    carried_ids = {s.source_message_id for s in previous_sentences}
    for candidate in ranked:
        sentence = candidate.sentence
        key = " ".join(sentence.text.casefold().split())
        cost = len(sentence.render().split())
        fresh = sentence.source_message_id not in carried_ids
        if key in seen or used + cost > budget:
            continue
        if fresh and per_source[sentence.source_message_id] >= per_message:
            continue
        seen.add(key)
        per_source[sentence.source_message_id] += 1
        used += cost
        chosen.append(candidate)
    chosen.sort(key=lambda c: c.order)
    sentences = tuple(c.sentence for c in chosen)
    lines = ([prefix] if prefix else []) + [s.render() for s in sentences]
    return "\n".join(lines), sentences
