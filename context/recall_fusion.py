"""Hybrid recall: the lexical ranking fused with a ranking by meaning.

BM25 finds the lines that share words with the message; it cannot find "kickboxing" for
"martial arts" or "Spain" for "European countries". A text embedding can, and misses what only
words pin down (names, numbers, rare terms). Reciprocal-rank fusion keeps both: a line's fused
score is ``1 / (k + its lexical rank) + weight / (k + its rank by similarity)`` (a ranking it is
absent from adds nothing), so a line near the top of either list rises and a line high on both
rises most, whatever the scales of BM25 and cosine.

The similarities are numbers the caller computed (the cosine of the message's vector with each
candidate's, or None for a candidate whose vector is not computed yet): the vectors, their
storage and their arithmetic stay at the edges, and this module stays pure. A candidate without
a similarity is ranked lexically only; when no candidate has one, the lexical ranking is
returned as it came, so recall without vectors is exactly lexical recall.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from context.recall_score import RecallCandidate, rank_order

__all__ = ["FUSION_K", "HYBRID_FLOOR", "VECTOR_LIMIT", "Fusion", "fuse"]

# Set on the LoCoMo dev split (`relaydesk eval locomo --recall both`, 8k window); the test split
# was run once, after. The rank constant of reciprocal-rank fusion: 60, the value of its paper
# (40: evidence coverage 0.888, 70: 0.913, at a floor of 0.25).
FUSION_K: Final = 60
# Most lines taken from the ranking by similarity: past a hundred a small model's cosines add
# more filler than evidence (50: 0.900, 100: 0.917, 200: 0.909, 300: 0.911 at a floor of 0.2).
VECTOR_LIMIT: Final = 100
# The share of the best fused score a line needs to use the room the current episode leaves
# idle (`context.recall.pack`'s ``floor``). Fused scores are flatter than BM25's, so the share
# is not lexical recall's: 0.3 gives coverage 0.888 for a median window of 3,970 tokens, 0.25
# 0.911 for 4,865, 0.22 0.916 for 5,587, 0.2 0.917 for 5,892.
HYBRID_FLOOR: Final = 0.22


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the two rankings are fused."""

    k: int = FUSION_K
    vector_limit: int = VECTOR_LIMIT
    vector_weight: float = 1.0
    floor: float = HYBRID_FLOOR


def fuse(
    lexical: Sequence[tuple[float, RecallCandidate]],
    candidates: Sequence[RecallCandidate],
    similarities: Sequence[float | None],
    fusion: Fusion | None = None,
) -> tuple[tuple[float, RecallCandidate], ...]:
    """``lexical`` (score, candidate) pairs, best first, fused with the ranking of
    ``candidates`` by ``similarities`` (one per candidate, None: no vector); best first, ties
    as `rank_order` breaks them. Without any similarity, ``lexical`` unchanged."""
    if len(similarities) != len(candidates):
        raise ValueError(f"{len(similarities)} similarities for {len(candidates)} candidates")
    fusion = fusion or Fusion()
    measured = [(s, c) for s, c in zip(similarities, candidates, strict=True) if s is not None]
    if not measured:
        return tuple(lexical)
    measured.sort(key=rank_order)
    fused: dict[RecallCandidate, float] = {}
    for rank, (_, candidate) in enumerate(lexical, start=1):
        fused[candidate] = 1.0 / (fusion.k + rank)
    for rank, (_, candidate) in enumerate(measured[: fusion.vector_limit], start=1):
        share = fusion.vector_weight / (fusion.k + rank)
        fused[candidate] = fused.get(candidate, 0.0) + share
    # Rounded like lexical scores, so the order does not hang on the summation's last bit.
    ranked = [(round(score, 9), candidate) for candidate, score in fused.items()]
    ranked.sort(key=rank_order)
    return tuple(ranked)
