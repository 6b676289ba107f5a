"""An inverted index over recall candidates, built once and queried many times.

`rank_candidates` tokenizes every candidate and scores every document on each call; with a
few thousand lines per customer that is most of a window's build time. `RecallIndex` keeps
each candidate's terms as postings, so a query only touches the documents that share a term
with it. Scores are the same BM25 (same constants, same summation order) and the ranking is
identical to `rank_candidates` on the same candidates.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from context.recall import CONTEXT_WEIGHT, SPEAKER_WEIGHT, RecallCandidate, recall_terms
from context.relevance import BM25_B, BM25_K1

__all__ = ["RecallIndex", "build_index"]


@dataclass(frozen=True, slots=True)
class RecallIndex:
    candidates: tuple[RecallCandidate, ...]
    postings: Mapping[str, tuple[tuple[int, int], ...]]  # term → ((doc, term frequency), …)
    lengths: tuple[int, ...]
    average_length: float
    names: Mapping[str, str]  # a speaker-name term → the speaker
    previous_turn: Mapping[int, int]  # a turn → the turn before it in its episode
    next_turn: Mapping[int, int]  # the reverse: a turn → the turn after it

    def rank(
        self,
        query: str,
        *,
        context_weight: float = CONTEXT_WEIGHT,
        speaker_weight: float = SPEAKER_WEIGHT,
        limit: int | None = None,
    ) -> tuple[tuple[float, RecallCandidate], ...]:
        """The candidates with a positive score for ``query``, best first (ties: newest);
        with ``limit``, only that many of the best."""
        wanted = recall_terms(query)
        content = sorted({term for term in wanted if term not in self.names})
        mentioned = {self.names[term] for term in wanted if term in self.names}
        own = self._bm25(content)
        scores: dict[int, float] = {}
        touched = set(own) | {turn for turn, before in self.previous_turn.items() if before in own}
        for index in touched:
            score = own.get(index, 0.0)
            before = self.previous_turn.get(index)
            if before is not None:
                score += context_weight * own.get(before, 0.0)
            if self.candidates[index].speaker in mentioned:
                score *= 1.0 + speaker_weight
            if score > 0:
                scores[index] = round(score, 6)
        ranked = [(score, self.candidates[index]) for index, score in scores.items()]

        def order(item: tuple[float, RecallCandidate]) -> tuple[float, int, tuple[int, ...]]:
            return (-item[0], -item[1].source_message_id, item[1].key)

        if limit is not None and len(ranked) > limit:
            return tuple(heapq.nsmallest(limit, ranked, key=order))  # only the best are read
        ranked.sort(key=order)
        return tuple(ranked)

    def _bm25(self, terms: Sequence[str]) -> dict[int, float]:
        count = len(self.candidates)
        per_doc: dict[int, list[tuple[str, int]]] = {}
        idf: dict[str, float] = {}
        for term in terms:
            postings = self.postings.get(term, ())
            if not postings:
                continue
            idf[term] = math.log(1.0 + (count - len(postings) + 0.5) / (len(postings) + 0.5))
            for doc, tf in postings:
                per_doc.setdefault(doc, []).append((term, tf))
        scores: dict[int, float] = {}
        for doc, hits in per_doc.items():
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * self.lengths[doc] / self.average_length)
            score = 0.0
            for term, tf in sorted(hits):  # the summation order of relevance.bm25_scores
                score += idf[term] * tf * (BM25_K1 + 1.0) / (tf + norm)
            scores[doc] = score
        return scores


def build_index(candidates: Sequence[RecallCandidate]) -> RecallIndex:
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for doc, candidate in enumerate(candidates):
        terms = recall_terms(candidate.text)
        lengths.append(len(terms))
        for term, tf in Counter(terms).items():
            postings.setdefault(term, []).append((doc, tf))
    names = {term: c.speaker for c in candidates for term in recall_terms(c.speaker)}
    previous: dict[int, int] = {}
    last: dict[str, int] = {}
    turns = sorted(
        (i for i, c in enumerate(candidates) if c.kind == "turn"),
        key=lambda i: candidates[i].source_message_id,
    )
    for index in turns:
        episode = candidates[index].episode_id
        if episode in last:
            previous[index] = last[episode]
        last[episode] = index
    average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
    return RecallIndex(
        candidates=tuple(candidates),
        postings=MappingProxyType({t: tuple(p) for t, p in postings.items()}),
        lengths=tuple(lengths),
        average_length=average,
        names=MappingProxyType(names),
        previous_turn=MappingProxyType(previous),
        next_turn=MappingProxyType({before: turn for turn, before in previous.items()}),
    )
