"""The knowledge slice's ranking by meaning: a chunk that stands out from the others joins the
lexical ranking by reciprocal rank; a message every chunk is alike to brings none; without
similarities the ranking is the lexical one, unchanged."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context import (
    Budget,
    ContextInputError,
    TiktokenCounter,
    build_window,
    load_encoding,
)
from context.knowledge import MAX_KNOWLEDGE_LINES, rank_knowledge
from context.knowledge_fusion import KnowledgeFusion, by_meaning, fuse_ranks
from tests.context.test_knowledge_window import CHUNKS, GIFT_CARDS, RETURNS, SHIPPING, request

# "Can I send the sneakers back?" shares no word with the returns page.
UNWORDED = "Can I send the sneakers back?"


def test_a_chunk_standing_out_is_taken_and_its_close_neighbours_too() -> None:
    # Median 0.79: 0.87 and 0.85 stand out (0.85 within 0.03 of the best); 0.83 does not.
    assert by_meaning([0.78, 0.87, 0.76, 0.85, 0.79]) == (1, 3)
    assert by_meaning([0.78, 0.87, 0.76, 0.83, 0.79]) == (1,)


def test_chunks_all_alike_give_nothing_by_meaning() -> None:
    assert by_meaning([0.81, 0.80, 0.82, 0.81]) == ()
    assert by_meaning([None, None]) == ()
    assert by_meaning([0.9]) == ()  # one chunk cannot stand out from itself


def test_chunks_without_a_vector_are_left_to_the_lexical_ranking() -> None:
    assert by_meaning([None, 0.70, 0.90, None, 0.70]) == (2,)


def test_the_fused_order_rewards_a_chunk_high_on_both_rankings() -> None:
    fused = fuse_ranks([0, 1], [1, 2], KnowledgeFusion(k=60))
    assert fused[1] > fused[0] > fused[2]
    assert fused[0] == pytest.approx(1 / 61)


def test_a_chunk_found_by_meaning_alone_enters_the_ranking() -> None:
    assert rank_knowledge(UNWORDED, CHUNKS) == ()
    ranked = rank_knowledge(UNWORDED, CHUNKS, similarities=[0.74, 0.75, 0.83])
    assert ranked == (RETURNS,)


def test_without_similarities_the_ranking_is_lexical() -> None:
    message = "How fast do orders ship?"
    lexical = rank_knowledge(message, CHUNKS)
    assert lexical and lexical[0] == SHIPPING
    assert rank_knowledge(message, CHUNKS, similarities=[None, None, None]) == lexical
    # All alike by meaning: the lexical ranking stands.
    assert rank_knowledge(message, CHUNKS, similarities=[0.80, 0.81, 0.80]) == lexical


def test_the_window_numbers_a_chunk_found_by_meaning(counter: TiktokenCounter) -> None:
    plain = request(UNWORDED)
    hybrid = dataclasses.replace(plain, knowledge_similarities=(0.74, 0.75, 0.83))
    assert "[k1]" not in build_window(plain, Budget.default(), counter).messages[0].content
    window = build_window(hybrid, Budget.default(), counter)
    assert "[k1] Returns policy (" in window.messages[0].content
    assert window.report.slice("knowledge").used > 0
    assert [ref.document_id for ref in window.knowledge] == [RETURNS.document_id]


def test_similarities_must_match_the_chunks() -> None:
    with pytest.raises(ContextInputError):
        dataclasses.replace(request(UNWORDED), knowledge_similarities=(0.8,))
    with pytest.raises(ValueError):
        rank_knowledge(UNWORDED, CHUNKS, similarities=[0.8])


@given(
    st.lists(st.one_of(st.none(), st.floats(0.0, 1.0)), min_size=1, max_size=40),
    st.sampled_from(["refund", "gift cards", "delivery", "nothing shared"]),
)
def test_a_ranking_holds_each_chunk_once_and_at_most_the_cap(
    similarities: list[float | None], message: str
) -> None:
    chunks = tuple(
        dataclasses.replace((GIFT_CARDS, SHIPPING, RETURNS)[i % 3], id=f"c{i}")
        for i in range(len(similarities))
    )
    ranked = rank_knowledge(message, chunks, similarities=similarities)
    assert len(ranked) == len(set(ranked)) <= MAX_KNOWLEDGE_LINES
    chosen = set(by_meaning(similarities))
    lexical = set(rank_knowledge(message, chunks))
    assert {c for c in ranked} <= lexical | {chunks[i] for i in chosen}


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())
