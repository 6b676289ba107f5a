"""An inverted index over recall candidates, built once and queried many times.

`rank_candidates` tokenizes every candidate and scores every document on each call; with a
few thousand lines per customer that is most of a window's build time. `RecallIndex` keeps
each candidate's terms as postings, so a query only touches the documents that share a term
with it (and their neighbours, which score through it). Scores are the same BM25 (same
constants, same summation order) spread by the formula of `context.recall_score.spread`, and the
ranking is identical to `rank_candidates` on the same candidates.

What does not depend on the query is worked out once per index and kept: each line's BM25 length
norm and its place among equal scores (`rank_order`'s tie-break), and, as queries meet them, each
term's per-line BM25 share and each line's neighbours with their weights. An index is kept for a
customer across turns (`gateway.memory.recall.RecallCache`), so a query pays only for adding up
the shares of the lines it matches.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from context.recall_score import (
    Around,
    RecallCandidate,
    Weights,
    candidate_terms,
    neighbours,
    query_terms,
    rank_order,
    recall_terms,
)
from context.relevance import BM25_B, BM25_K1

__all__ = ["RecallIndex", "build_index"]


# Beyond what rounding to 6 places moves a score (half a step, plus the float's own error).
_ROUNDING_STEP: Final = 2e-6

# A line's neighbours as (line, weight) pairs in the order `spread` adds their shares: the line
# itself, the lines after it, the lines before it.
Fanout = tuple[tuple[int, float], ...]


@dataclass(frozen=True, slots=True)
class RecallIndex:
    candidates: tuple[RecallCandidate, ...]
    postings: Mapping[str, tuple[tuple[int, int], ...]]  # term → ((doc, term frequency), …)
    lengths: tuple[int, ...]
    average_length: float
    names: Mapping[str, str]  # a speaker-name term → the speaker
    around: Mapping[int, Around]  # a line → (lines before, lines after), nearest first
    reach: int  # how many lines each way ``around`` holds
    norms: tuple[float, ...]  # each line's BM25 length norm
    ties: tuple[int, ...]  # each line's place in `rank_order` among lines of equal score
    # Rendered lines and their token counts, filled as `context.recall.pack` meets them: an
    # index serves one customer under one counter, and a line costs the same on every request.
    lines: dict[RecallCandidate, tuple[str, int]] = field(default_factory=dict, compare=False)
    # A term's BM25 share of each line holding it, and a line's `Fanout` under some weights:
    # fixed for the index, kept as queries meet them (a conversation repeats its words).
    term_shares: dict[str, tuple[tuple[int, float], ...]] = field(
        default_factory=dict, compare=False
    )
    fanouts: dict[Weights, list[Fanout | None]] = field(default_factory=dict, compare=False)

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
        # `spread`'s formula: each scoring line, in line order, adds its shares around it.
        total: dict[int, float] = {}
        own = self._bm25(content)
        fanouts = self.fanouts.setdefault(weights, [None] * len(self.candidates))
        for doc in sorted(own):
            score = own[doc]
            fanout = fanouts[doc]
            if fanout is None:
                fanout = fanouts[doc] = self._fanout(doc, weights)
            for index, weight in fanout:
                total[index] = total.get(index, 0.0) + weight * score
        if mentioned:
            boost = 1.0 + weights.speaker
            lines = self.candidates
            total = {
                index: value * boost if lines[index].speaker in mentioned else value
                for index, value in total.items()
            }
        ranked = _best(total, self.ties, limit)
        return tuple((score, self.candidates[index]) for score, index in ranked)

    def _bm25(self, terms: Sequence[str]) -> dict[int, float]:
        """Each line's BM25 for ``terms`` (sorted): a line's shares add up in term order, the
        summation order of `relevance.bm25_scores`."""
        scores: dict[int, float] = {}
        for term in terms:
            for doc, share in self._shares(term):
                scores[doc] = scores.get(doc, 0.0) + share
        return scores

    def _shares(self, term: str) -> tuple[tuple[int, float], ...]:
        shares = self.term_shares.get(term)
        if shares is None:
            postings = self.postings.get(term)
            if postings is None:
                return ()  # not kept: the terms kept are the index's own, a bounded set
            count = len(self.candidates)
            idf = math.log(1.0 + (count - len(postings) + 0.5) / (len(postings) + 0.5))
            shares = tuple(
                (doc, idf * tf * (BM25_K1 + 1.0) / (tf + self.norms[doc])) for doc, tf in postings
            )
            self.term_shares[term] = shares
        return shares

    def _fanout(self, doc: int, weights: Weights) -> Fanout:
        before, after = self.around[doc]
        return (
            (doc, 1.0),
            *zip(after, weights.before, strict=False),  # doc is before them
            *zip(before, weights.after, strict=False),
        )


def _best(
    total: Mapping[int, float], ties: Sequence[int], limit: int | None
) -> list[tuple[float, int]]:
    """The lines scoring above zero once rounded to 6 places, in `rank_order`'s order (best
    score, then each line's tie place); with ``limit``, only that many. Rounding keeps the order
    of the raw scores, so a line more than a rounding step below the limit-th raw score cannot
    make it: only the lines above that bar are rounded and sorted."""
    bar = 0.0
    if limit and len(total) > limit:
        bar = sorted(total.values(), reverse=True)[limit - 1] - _ROUNDING_STEP
    # (-score, tie, line) sorts in `rank_order`'s order.
    ranked = [
        (-score, ties[index], index)
        for index, value in total.items()
        if value >= bar and (score := round(value, 6)) > 0
    ]
    ranked.sort()
    return [(-score, index) for score, _, index in ranked[:limit]]


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
    tied = sorted(range(len(candidates)), key=lambda doc: rank_order((0.0, candidates[doc])))
    ties = [0] * len(candidates)
    for place, doc in enumerate(tied):
        ties[doc] = place
    return RecallIndex(
        candidates=tuple(candidates),
        postings=MappingProxyType({t: tuple(p) for t, p in postings.items()}),
        lengths=tuple(lengths),
        average_length=average,
        names=MappingProxyType(names),
        around=MappingProxyType(neighbours(candidates, reach)),
        reach=reach,
        norms=tuple(BM25_K1 * (1.0 - BM25_B + BM25_B * length / average) for length in lengths),
        ties=tuple(ties),
    )
