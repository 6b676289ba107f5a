"""The knowledge slice's ranking by meaning, fused with its lexical ranking.

A customer asks "can I send it back?" and the returns page says "refund within 30 days": no
word in common, so BM25 finds nothing. The cosine of the message's vector with each chunk's
does. Unlike recall, knowledge must be able to find *nothing*, and a small embedding model's
cosines are compressed (e5-small scores an unrelated chunk ~0.72-0.80, the answer ~0.80-0.90),
so no fixed threshold holds across tenants and questions. A chunk enters the ranking by meaning
only when it stands out from the tenant's other chunks — at least ``lift`` above the median
chunk's similarity for this message — and lies within ``margin`` of the best one, so a close
page does not bring its distant neighbours and a question about nothing in the documents
(every chunk alike) brings none. The two rankings are then fused by reciprocal rank
(`context.recall_fusion`'s rule): a chunk near the top of either rises, one high on both most.

Pure: the similarities are numbers the caller computed (None for a chunk whose vector is not
computed yet, which is then ranked lexically only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median
from typing import Final

from context.recall_fusion import FUSION_K

__all__ = [
    "KNOWLEDGE_MARGIN",
    "KNOWLEDGE_LIFT",
    "KnowledgeFusion",
    "by_meaning",
    "fuse_ranks",
]

# Set on the offline model (multilingual-e5-small): the answer to a question stands ~0.05-0.08
# above the median chunk, a question the documents do not answer leaves every chunk within ~0.03.
KNOWLEDGE_LIFT: Final = 0.04
# Within this of the best chunk's similarity.
KNOWLEDGE_MARGIN: Final = 0.03


@dataclass(frozen=True, slots=True)
class KnowledgeFusion:
    """Which chunks the ranking by meaning takes, and the fusion's rank constant."""

    lift: float = KNOWLEDGE_LIFT
    margin: float = KNOWLEDGE_MARGIN
    k: int = FUSION_K


def by_meaning(
    similarities: Sequence[float | None], fusion: KnowledgeFusion | None = None
) -> tuple[int, ...]:
    """The chunks (their indexes) the ranking by meaning keeps, most similar first (ties: the
    earlier chunk)."""
    fusion = fusion or KnowledgeFusion()
    measured = [(s, i) for i, s in enumerate(similarities) if s is not None]
    if not measured:
        return ()
    best = max(s for s, _ in measured)
    floor = max(median(s for s, _ in measured) + fusion.lift, best - fusion.margin)
    kept = [(s, i) for s, i in measured if s >= floor]
    kept.sort(key=lambda pair: (-pair[0], pair[1]))
    return tuple(i for _, i in kept)


def fuse_ranks(
    lexical: Sequence[int], meaning: Sequence[int], fusion: KnowledgeFusion | None = None
) -> dict[int, float]:
    """Each chunk's fused score from its place in either ranking (best first each)."""
    k = (fusion or KnowledgeFusion()).k
    fused: dict[int, float] = {}
    for rank, index in enumerate(lexical, start=1):
        fused[index] = 1.0 / (k + rank)
    for rank, index in enumerate(meaning, start=1):
        fused[index] = fused.get(index, 0.0) + 1.0 / (k + rank)
    # Rounded, so an order does not hang on the summation's last bit.
    return {index: round(score, 9) for index, score in fused.items()}
