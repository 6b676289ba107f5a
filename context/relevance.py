"""Lexical relevance of facts and summaries to the current subject.

A small Okapi BM25 over Portuguese and English text: accents folded, case folded, a short
stopword list and a crude plural fold ("pedidos" → "pedido", "orders" → "order"). Good enough to
rank a few hundred facts per request without an index; deterministic for identical inputs.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Final

from context.inputs import FactItem, SummaryItem, Turn

__all__ = [
    "SUBJECT_TURNS",
    "bm25_scores",
    "rank_facts",
    "rank_summaries",
    "subject_terms",
    "terms",
]

# How many recent turns, besides the current message, define the subject.
SUBJECT_TURNS: Final = 4
TAG_WEIGHT: Final = 3.0
# The start of a long message says what it is about; scanning a pasted log whole buys nothing.
_SUBJECT_CHARS: Final = 4000
_K1: Final = 1.2
BM25_K1: Final = _K1
_B: Final = 0.75
BM25_B: Final = _B

_WORD: Final = re.compile(r"[^\W_]+")
_STOPWORDS: Final = frozenset(
    """
    a o as os um uma uns umas de do da dos das no na nos nas em por para pra com sem que se e ou
    mas como mais menos ja nao sim eu voce voces ele ela eles elas meu minha meus minhas seu sua
    seus suas nosso nossa isso isto esse essa este esta aquele aquela ao aos pelo pela pelos pelas
    foi ser estar tem ter ha muito pouco qual quais quando onde porque pois entao tambem so la aqui
    the an of to in on at by for with without and or but is are was were be been being it its this
    that these those i you he she we they my your his her our their me him us them do does did
    have has had not no yes can could would should will what which who when where why how please
    """.split()
)


def terms(text: str) -> tuple[str, ...]:
    """Normalized terms of ``text``: folded accents and case, no stopwords, plurals folded."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    out: list[str] = []
    for word in _WORD.findall(plain):
        if word in _STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        out.append(_fold_plural(word))
    return tuple(out)


def _fold_plural(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and not word.isdigit():
        return word[:-1]
    return word


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]]) -> tuple[float, ...]:
    """BM25 score of each document (a term sequence) for the distinct terms of ``query``."""
    count = len(documents)
    if count == 0:
        return ()
    wanted = set(query)
    if not wanted:
        return tuple(0.0 for _ in documents)
    lengths = [len(doc) for doc in documents]
    average = sum(lengths) / count or 1.0
    freqs = [Counter(term for term in doc if term in wanted) for doc in documents]
    document_frequency: Counter[str] = Counter()
    for freq in freqs:
        document_frequency.update(freq.keys())
    idf = {
        term: math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        for term, df in document_frequency.items()
    }
    scores: list[float] = []
    for freq, length in zip(freqs, lengths, strict=True):
        norm = _K1 * (1.0 - _B + _B * length / average)
        score = 0.0
        for term in sorted(freq):  # fixed summation order: identical inputs, identical floats
            tf = freq[term]
            score += idf[term] * tf * (_K1 + 1.0) / (tf + norm)
        scores.append(score)
    return tuple(scores)


def subject_terms(message: str, turns: Sequence[Turn], tags: Sequence[str]) -> tuple[str, ...]:
    """Terms of the current subject: the message, the last few turns and the subject tags."""
    recent = turns[len(turns) - SUBJECT_TURNS :] if len(turns) > SUBJECT_TURNS else turns
    parts = [message, *(turn.text for turn in recent), *tags]
    return tuple(term for part in parts for term in _subject_part_terms(part[:_SUBJECT_CHARS]))


@functools.lru_cache(maxsize=2048)
def _subject_part_terms(text: str) -> tuple[str, ...]:
    """`terms` of a subject part, remembered: consecutive turns of a conversation share most
    of their subject (the last few turns), and a text's terms never change. The subjects of
    a few hundred conversations (~2.5 MB when full)."""
    return terms(text)


def _fact_terms(fact: FactItem) -> tuple[str, ...]:
    return terms(" ".join((fact.key, fact.value, *fact.tags)))


def rank_facts(
    facts: Sequence[FactItem], subject: Sequence[str], tags: Sequence[str] = ()
) -> tuple[FactItem, ...]:
    """Facts in fill priority: pinned facts and rules first, then by relevance.

    Age never lowers a fact; ties go to confirmed, then more confident, then (key, id).
    """
    scores = bm25_scores(subject, [_fact_terms(fact) for fact in facts])
    wanted_tags = {tag.casefold() for tag in tags}

    def priority(index: int) -> tuple[int, float, int, float, str, str]:
        fact = facts[index]
        overlap = sum(1 for tag in fact.tags if tag.casefold() in wanted_tags)
        score = round(scores[index] + TAG_WEIGHT * overlap, 6)
        return (
            0 if fact.pinned or fact.is_rule else 1,
            -score,
            0 if fact.confirmed else 1,
            -fact.confidence,
            fact.key,
            fact.id,
        )

    return tuple(facts[i] for i in sorted(range(len(facts)), key=priority))


def rank_summaries(
    summaries: Sequence[SummaryItem], subject: Sequence[str]
) -> tuple[SummaryItem, ...]:
    """Summaries in fill priority: normalized relevance plus a recency bonus (1 for the newest,
    1/2 for the next, …), so a clearly relevant old episode beats a recent unrelated one."""
    scores = bm25_scores(subject, [terms(summary.text) for summary in summaries])
    top = max(scores, default=0.0)
    by_recency = sorted(
        range(len(summaries)),
        key=lambda i: (summaries[i].ended_at, summaries[i].id),
        reverse=True,
    )
    rank_of = {index: rank for rank, index in enumerate(by_recency)}

    def priority(index: int) -> tuple[float, int]:
        relevance = scores[index] / top if top > 0 else 0.0
        rank = rank_of[index]
        return (-round(relevance + 1.0 / (1 + rank), 6), rank)

    return tuple(summaries[i] for i in sorted(range(len(summaries)), key=priority))
