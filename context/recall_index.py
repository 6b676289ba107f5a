"""An inverted index over recall candidates, built once and queried many times.

`rank_candidates` tokenizes every candidate and scores every document on each call; with a
few thousand lines per customer that is most of a window's build time. `RecallIndex` keeps
each candidate's terms as postings, so a query only touches the documents that share a term
with it (and their neighbours, which score through it). Scores are the same BM25 (same
constants, same summation order) combined by the same `context.recall_score.spread`, and the ranking
is identical to `rank_candidates` on the same candidates.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from context.recall_score import (
    Around,
    RecallCandidate,
    Weights,
    candidate_terms,
    neighbours,
    query_terms,
    rank_order,
    recall_terms,
    spread,
)
from context.relevance import BM25_B, BM25_K1

__all__ = ["RecallIndex", "build_index"]


@dataclass(frozen=True, slots=True)
class RecallIndex:
    candidates: tuple[RecallCandidate, ...]
    postings: Mapping[str, tuple[tuple[int, int], ...]]  # term → ((doc, term frequency), …)
    lengths: tuple[int, ...]
    average_length: float
    names: Mapping[str, str]  # a speaker-name term → the speaker
    around: Mapping[int, Around]  # a line → (lines before, lines after), nearest first
    reach: int  # how many lines each way ``around`` holds
    # Token counts of rendered lines, filled as `context.recall.pack` meets them: an index
    # serves one customer under one counter, and a line costs the same on every request.
    line_tokens: dict[RecallCandidate, int] = field(default_factory=dict, compare=False)

    def rank(
        self,
        query: str,
        *,
        weights: Weights | None = None,
        limit: int | None = None,
    ) -> tuple[tuple[float, RecallCandidate], ...]:
        """The candidates with a positive score for ``query``, best first (ties: newest);
        with ``limit``, only that many of the best."""
        weights = weights or Weights()
        if weights.reach > self.reach:
            raise ValueError(f"weights reach {weights.reach} lines; the index holds {self.reach}")
        wanted = query_terms(query)
        content = sorted({term for term in wanted if term not in self.names})
        mentioned = {self.names[term] for term in wanted if term in self.names}
        own = self._bm25(content)
        ranked = spread(own, self.around, self.candidates, mentioned, weights)
        if limit is not None and len(ranked) > limit:
            return tuple(heapq.nsmallest(limit, ranked, key=rank_order))  # only the best are read
        ranked.sort(key=rank_order)
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


def build_index(candidates: Sequence[RecallCandidate], reach: int | None = None) -> RecallIndex:
    """The index of ``candidates``, each line's neighbours kept ``reach`` lines each way (by
    default as far as the default `Weights` look)."""
    reach = Weights().reach if reach is None else reach
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for doc, candidate in enumerate(candidates):
        terms = candidate_terms(candidate)
        lengths.append(len(terms))
        for term, tf in Counter(terms).items():
            postings.setdefault(term, []).append((doc, tf))
    names = {term: c.speaker for c in candidates for term in recall_terms(c.speaker)}
    average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
    return RecallIndex(
        candidates=tuple(candidates),
        postings=MappingProxyType({t: tuple(p) for t, p in postings.items()}),
        lengths=tuple(lengths),
        average_length=average,
        names=MappingProxyType(names),
        around=MappingProxyType(neighbours(candidates, reach)),
        reach=reach,
    )
