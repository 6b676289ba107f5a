"""An inverted index over a tenant's knowledge chunks, built once where they are cached.

`context.relevance.bm25_scores` reads every chunk's terms on every call: with a few thousand
chunks that is tens of milliseconds a window. `KnowledgeIndex` keeps each term's postings and
each chunk's length norm, so a message touches only the chunks sharing a term with it. Scores
are the same BM25 (same constants, same summation order: a chunk's shares add up in term
order), so ranking through the index or without it gives the same order, as
`context.recall_index` does for recall.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from context.inputs import KnowledgeItem
from context.relevance import BM25_B, BM25_K1

__all__ = ["KnowledgeIndex", "build_knowledge_index"]


@dataclass(frozen=True, slots=True)
class KnowledgeIndex:
    items: tuple[KnowledgeItem, ...]
    postings: Mapping[str, tuple[tuple[int, int], ...]]  # term → ((chunk, term frequency), …)
    norms: tuple[float, ...]  # each chunk's BM25 length norm

    def scores(self, wanted: Sequence[str]) -> dict[int, float]:
        """Each chunk's BM25 for the distinct terms ``wanted``; chunks scoring 0 left out."""
        count = len(self.items)
        scores: dict[int, float] = {}
        for term in sorted(set(wanted)):
            postings = self.postings.get(term)
            if not postings:
                continue
            df = len(postings)
            idf = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
            for doc, tf in postings:
                share = idf * tf * (BM25_K1 + 1.0) / (tf + self.norms[doc])
                scores[doc] = scores.get(doc, 0.0) + share
        return scores


def build_knowledge_index(
    items: Sequence[KnowledgeItem], terms: Sequence[Sequence[str]]
) -> KnowledgeIndex:
    """The index of ``items``, each matched by its ``terms`` (one sequence per item)."""
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for doc, chunk_terms in enumerate(terms):
        lengths.append(len(chunk_terms))
        for term, tf in Counter(chunk_terms).items():
            postings.setdefault(term, []).append((doc, tf))
    average = (sum(lengths) / len(lengths) if lengths else 0.0) or 1.0
    return KnowledgeIndex(
        items=tuple(items),
        postings=MappingProxyType({term: tuple(p) for term, p in postings.items()}),
        norms=tuple(BM25_K1 * (1.0 - BM25_B + BM25_B * length / average) for length in lengths),
    )
