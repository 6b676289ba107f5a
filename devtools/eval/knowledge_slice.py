"""The knowledge slice of one window, built as the reply path builds it, lexically or hybrid.

Lexical: `context.knowledge.rank_knowledge` over the chunks' `KnowledgeIndex`, exactly what
`context.window.build_window` calls without vectors. Hybrid: the same call given each chunk's
cosine with the question, as the reply path gives it once the chunks are embedded
(`context.knowledge_fusion`: the chunks that stand out by meaning fused with BM25's).

Either ranking is then packed as the window packs its knowledge pool (`context.fill.Pool`:
best first, a line that does not fit skipped so a smaller one after it still can, the block's
header charged with the first line) into the knowledge slice's own budget, and numbered in
window order (`context.knowledge.in_window_order`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context.fill import Ledger, Pick, Pool
from context.inputs import KnowledgeItem
from context.knowledge import (
    KNOWLEDGE_HEADER,
    in_window_order,
    knowledge_line,
    rank_knowledge,
)
from context.knowledge_index import KnowledgeIndex
from context.render import BLOCK_SEPARATOR
from context.tokens import TokenCounter

__all__ = ["KnowledgeSlice", "hybrid_ranking", "lexical_ranking", "packed_slice"]


@dataclass(frozen=True, slots=True)
class KnowledgeSlice:
    """What the slice ranked (best first, after the floor and the cap) and what of it fit the
    budget, in the order the window numbers it; ``tokens`` is what the slice used."""

    ranked: tuple[KnowledgeItem, ...]
    window: tuple[KnowledgeItem, ...]
    tokens: int


def lexical_ranking(message: str, index: KnowledgeIndex) -> tuple[KnowledgeItem, ...]:
    return rank_knowledge(message, index.items, index=index)


def hybrid_ranking(
    message: str, index: KnowledgeIndex, similarities: Sequence[float | None]
) -> tuple[KnowledgeItem, ...]:
    """The chunks ranked as the reply path ranks them with vectors: BM25 fused with the
    chunks that stand out by ``similarities`` (one cosine per chunk of ``index``,
    `context.knowledge_fusion`)."""
    return rank_knowledge(message, index.items, index=index, similarities=similarities)


def packed_slice(
    ranked: Sequence[KnowledgeItem], budget: int, counter: TokenCounter
) -> KnowledgeSlice:
    """``ranked`` packed into ``budget`` tokens as the window fills its knowledge pool."""
    ledger = Ledger("knowledge", budget)
    pool = Pool(
        ledger,
        "knowledge",
        counter.count(BLOCK_SEPARATOR) + counter.count(KNOWLEDGE_HEADER),
        # Costed with the largest number a line may get, as the window costs them.
        tuple(1 + counter.count(knowledge_line(len(ranked), item)) for item in ranked),
    )
    picks: list[Pick] = []
    pool.fill(ledger.allowance, picks, second_pass=False)
    window = in_window_order(ranked[ref] for ref in sorted(pool.chosen))
    return KnowledgeSlice(tuple(ranked), window, ledger.used)
