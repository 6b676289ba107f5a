"""The knowledge index scores chunks exactly as `bm25_scores` does, so ranking through it or
without it gives the same chunks in the same order."""

from __future__ import annotations

import random
from datetime import date

from context.inputs import KnowledgeItem
from context.knowledge import chunk_terms, rank_knowledge
from context.knowledge_index import build_knowledge_index
from context.recall_score import recall_terms
from context.relevance import bm25_scores

WORDS = ("refund", "refunds", "delivery", "card", "return", "pedido", "entrega", "troca", "pix")


def _corpus(seed: int, size: int) -> tuple[KnowledgeItem, ...]:
    rng = random.Random(seed)
    items = []
    for i in range(size):
        text = " ".join(rng.choice(WORDS + tuple(f"w{n}" for n in range(40))) for _ in range(30))
        title = f"Doc {i % 7}"
        items.append(
            KnowledgeItem(
                id=str(i),
                document_id=f"d{i % 7}",
                title=title,
                text=text,
                updated_at=date(2026, 1 + i % 12, 1),
                position=i,
                terms=chunk_terms(title, (), text),
            )
        )
    return tuple(items)


def test_index_scores_equal_bm25_to_the_last_bit() -> None:
    items = _corpus(7, 120)
    index = build_knowledge_index(items, [item.terms for item in items])
    for query in ("refund to my card", "entrega do pedido", "w3 w17 troca", "nothing here"):
        wanted = recall_terms(query)
        expected = bm25_scores(wanted, [item.terms for item in items])
        assert index.scores(wanted) == {d: s for d, s in enumerate(expected) if s > 0}


def test_ranking_with_or_without_the_index_is_the_same() -> None:
    for seed in range(5):
        items = _corpus(seed, 80)
        index = build_knowledge_index(items, [item.terms for item in items])
        for query in ("refund delivery", "pix troca w5", "card", "olá"):
            assert rank_knowledge(query, items, index=index) == rank_knowledge(query, items)
