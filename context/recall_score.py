"""What both recall rankers share: the candidate line, the terms it is matched by, its
neighbours and the one formula that spreads scores over them.

`context.recall.rank_candidates` scores candidates directly and `context.recall_index.RecallIndex`
through postings; both combine BM25 scores here, so they rank alike to the last bit.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

import Stemmer

from context.date_terms import line_date_terms, query_date_terms
from context.relevance import terms

__all__ = [
    "AFTER_WEIGHTS",
    "BEFORE_WEIGHTS",
    "SPEAKER_WEIGHT",
    "Around",
    "CandidateKind",
    "RecallCandidate",
    "Weights",
    "candidate_terms",
    "neighbours",
    "query_terms",
    "rank_order",
    "recall_terms",
    "spread",
]

# Shares of the scores of the lines before a candidate (same episode, same kind, nearest first)
# added to its own: an answer shares few words with the question that prompted it, and a topic
# runs over a few turns. Set on the LoCoMo dev split (two lines each way: +0.014 evidence
# coverage; three: +0.006 more).
BEFORE_WEIGHTS: Final = (0.7, 0.5, 0.3)
# Shares of the scores of the lines after a candidate: the turn before a matching reply is
# often what the reply is about ("What genre?" … "Drama and romance!").
AFTER_WEIGHTS: Final = (0.5, 0.3, 0.2)
# Boost of a candidate whose speaker the query names (a question about Nate is answered by
# what Nate said far more often than by what was said to him).
SPEAKER_WEIGHT: Final = 1.5

CandidateKind = Literal["turn", "sentence"]


@dataclass(frozen=True, slots=True)
class RecallCandidate:
    """One retrievable line: a raw turn (typed, or a call's, masked) or a summary sentence of
    another episode. ``confidence`` is a call turn's transcript confidence."""

    episode_id: str
    source_message_id: int
    kind: CandidateKind
    speaker: str
    text: str
    at: datetime
    position: int = 0  # order among lines of the same message
    confidence: float | None = None

    @property
    def key(self) -> tuple[int, int, int]:
        """Chronological order: message, then turn before its sentences, then position."""
        return (self.source_message_id, 0 if self.kind == "turn" else 1, self.position)


# English Snowball (the Porter2 stemmer): the suffix folds of a stemmer everyone reads the same.
# Portuguese words pass through it mostly unchanged; query and lines are stemmed alike.
_STEMMER: Final = Stemmer.Stemmer("english")


def recall_terms(text: str) -> tuple[str, ...]:
    """The word terms recall matches on: `relevance.terms`, stemmed ("jogging" → "jog")."""
    return tuple(_STEMMER.stemWords(terms(text)))


def candidate_terms(candidate: RecallCandidate) -> tuple[str, ...]:
    """What a line is indexed by: its words and its calendar terms (its day and the days its
    relative time words name)."""
    return recall_terms(candidate.text) + line_date_terms(candidate.at.date(), candidate.text)


def query_terms(query: str) -> tuple[str, ...]:
    """What a message searches with: its words and the calendar terms of its dates."""
    return recall_terms(query) + query_date_terms(query)


Around = tuple[tuple[int, ...], tuple[int, ...]]


def neighbours(candidates: Sequence[RecallCandidate], reach: int = 3) -> dict[int, Around]:
    """Each candidate's lines before and after it (nearest first, at most ``reach`` each way)
    in its episode among lines of its kind, by index: turns chain with turns, summary sentences
    with sentences."""
    chains: dict[tuple[str, str], list[int]] = {}
    for index in sorted(range(len(candidates)), key=lambda i: candidates[i].key):
        candidate = candidates[index]
        chains.setdefault((candidate.episode_id, candidate.kind), []).append(index)
    out: dict[int, Around] = {}
    for chain in chains.values():
        for position, index in enumerate(chain):
            before = tuple(reversed(chain[max(0, position - reach) : position]))
            after = tuple(chain[position + 1 : position + 1 + reach])
            out[index] = (before, after)
    return out


def spread(
    own: Mapping[int, float],
    around: Mapping[int, Around],
    candidates: Sequence[RecallCandidate],
    mentioned: Collection[str],
    weights: Weights,
) -> list[tuple[float, RecallCandidate]]:
    """Every line's score from its own BM25 (``own``: the lines that have one) and shares of
    its neighbours', times ``1 + weights.speaker`` for a line by a ``mentioned`` speaker;
    the lines scoring above zero, unordered. Each scoring line adds its shares to the lines
    around it, in line order: the one formula both rankers use, so they agree to the last bit,
    and the work grows with the lines that match, not with the lines they touch."""
    total: dict[int, float] = {}
    for doc in sorted(own):
        score = own[doc]
        total[doc] = total.get(doc, 0.0) + score
        before, after = around[doc]
        for weight, index in zip(weights.before, after, strict=False):  # doc is before them
            total[index] = total.get(index, 0.0) + weight * score
        for weight, index in zip(weights.after, before, strict=False):
            total[index] = total.get(index, 0.0) + weight * score
    boost = 1.0 + weights.speaker
    scored = []
    for index, value in total.items():
        candidate = candidates[index]
        if candidate.speaker in mentioned:
            value *= boost
        value = round(value, 6)
        if value > 0:
            scored.append((value, candidate))
    return scored


@dataclass(frozen=True, slots=True)
class Weights:
    """How neighbours (nearest first) and a named speaker weigh in a candidate's score."""

    before: tuple[float, ...] = BEFORE_WEIGHTS
    after: tuple[float, ...] = AFTER_WEIGHTS
    speaker: float = SPEAKER_WEIGHT

    @property
    def reach(self) -> int:
        return max(len(self.before), len(self.after))


def rank_order(item: tuple[float, RecallCandidate]) -> tuple[float, int, tuple[int, int, int]]:
    """Best score first; ties: newest message, then chronological within it."""
    return (-item[0], -item[1].source_message_id, item[1].key)
