"""Hybrid recall: reciprocal-rank fusion of the lexical ranking with a ranking by similarity,
lexical recall unchanged without similarities, rows without a vector still ranked, and the idle
room's floor on the fused score."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context import TiktokenCounter, load_encoding
from context.recall import RecallCandidate, RecallEpisode, rank_candidates, recall
from context.recall_fusion import Fusion, fuse
from context.recall_index import build_index

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2023, 5, 8, tzinfo=UTC)
EPISODES = {
    f"e{n}": RecallEpisode(f"e{n}", "webchat", "typed", START, START + timedelta(days=1))
    for n in range(4)
}
WORDS = ["kickboxing", "martial", "arts", "spain", "trip", "garage", "boxes", "lamp", "porto"]


def _line(index: int, text: str, episode: str = "e0") -> RecallCandidate:
    return RecallCandidate(
        episode, index + 1, "turn", "Ana", text, START + timedelta(minutes=index)
    )


@st.composite
def _pools(draw: st.DrawFn) -> list[RecallCandidate]:
    count = draw(st.integers(min_value=1, max_value=30))
    return [
        _line(
            index,
            " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))),
            f"e{draw(st.integers(0, 3))}",
        )
        for index in range(count)
    ]


def test_the_fused_score_is_the_sum_of_reciprocal_ranks() -> None:
    a, b, c = _line(0, "a"), _line(1, "b"), _line(2, "c")
    lexical = [(9.0, a), (4.0, b)]
    # By similarity: c, then a; b has no vector.
    fused = fuse(lexical, [a, b, c], [0.5, None, 0.9], Fusion(k=60))
    scores = {candidate: score for score, candidate in fused}
    assert scores[a] == round(1 / 61 + 1 / 62, 9)
    assert scores[b] == round(1 / 62, 9)
    assert scores[c] == round(1 / 61, 9)
    assert [candidate for _, candidate in fused] == [a, c, b]


def test_the_vector_weight_and_limit_shape_the_vector_side() -> None:
    a, b, c = _line(0, "a"), _line(1, "b"), _line(2, "c")
    fused = fuse([(1.0, a)], [a, b, c], [0.1, 0.9, 0.8], Fusion(k=10, vector_limit=1))
    # Only the best by similarity (b) is admitted from the vector side.
    assert {candidate for _, candidate in fused} == {a, b}
    heavy = fuse([(1.0, a)], [a, b, c], [0.1, 0.9, 0.8], Fusion(k=10, vector_weight=2.0))
    assert heavy == (
        (round(1 / 11 + 2 / 13, 9), a),
        (round(2 / 11, 9), b),
        (round(2 / 12, 9), c),
    )


def test_a_line_sharing_no_word_with_the_question_is_found_by_meaning() -> None:
    pool = [
        _line(0, "I took up kickboxing last month"),
        _line(1, "The garage is full of boxes"),
        _line(2, "Mostly old lamps and boxes"),
    ]
    query = "Which martial arts does Ana practise?"
    assert rank_candidates(query, pool) == ()
    items = recall(query, pool, EPISODES, 200, COUNTER, similarities=[0.82, 0.1, 0.12])
    assert "kickboxing" in items[0].text


def test_lines_without_a_vector_are_still_ranked_lexically() -> None:
    pool = [_line(0, "our trip to spain"), _line(1, "a lamp in porto"), _line(2, "boxes")]
    fused = fuse(rank_candidates("trip spain", pool), pool, [None, None, 0.9])
    assert pool[0] in {candidate for _, candidate in fused}
    items = recall("trip spain", pool, EPISODES, 200, COUNTER, similarities=[None, None, 0.9])
    assert "our trip to spain" in items[0].text


@settings(max_examples=60, deadline=None)
@given(_pools(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.booleans())
def test_without_similarities_recall_is_exactly_lexical(
    pool: list[RecallCandidate], words: list[str], indexed: bool
) -> None:
    query = " ".join(words)
    index = build_index(pool) if indexed else None
    plain = recall(query, pool, EPISODES, 120, COUNTER, index=index, extra=300)
    for none in (None, [None] * len(pool)):
        same = recall(
            query, pool, EPISODES, 120, COUNTER, index=index, extra=300, similarities=none
        )
        assert same == plain
    lexical = rank_candidates(query, pool)
    assert fuse(lexical, pool, [None] * len(pool)) == lexical


@settings(max_examples=60, deadline=None)
@given(_pools(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.data())
def test_the_index_and_the_direct_ranking_fuse_alike(
    pool: list[RecallCandidate], words: list[str], data: st.DataObject
) -> None:
    query = " ".join(words)
    similarities = data.draw(
        st.lists(st.one_of(st.none(), st.floats(-1.0, 1.0)), min_size=len(pool), max_size=len(pool))
    )
    direct = recall(query, pool, EPISODES, 150, COUNTER, extra=200, similarities=similarities)
    index = build_index(pool)
    indexed = recall(
        query, pool, EPISODES, 150, COUNTER, index=index, extra=200, similarities=similarities
    )
    assert indexed == direct


def test_the_idle_room_takes_only_lines_near_the_best_fused_score() -> None:
    pool = [_line(index, f"line number {index} about nothing much") for index in range(40)]
    similarities = [1.0 - index / 100 for index in range(40)]  # line 0 best, then in order
    one = COUNTER.count("[8 May 2023] Ana: line number 10 about nothing much")
    # No base room: only the idle room, and only for lines within the floor of the best.
    fusion = Fusion(k=10, floor=0.52)
    items = recall(
        "anything",
        pool,
        EPISODES,
        0,
        COUNTER,
        extra=one * 40,
        similarities=similarities,
        fusion=fusion,
    )
    kept = items[0].text.count("\n") + 1
    # 1/(10 + r) >= 0.52 / 11  <=>  r <= 11: the eleven best by similarity, no more.
    assert kept == 11
    looser = recall(
        "anything",
        pool,
        EPISODES,
        0,
        COUNTER,
        extra=one * 40,
        similarities=similarities,
        fusion=Fusion(k=10, floor=0.0),
    )
    assert looser[0].text.count("\n") + 1 > kept


def test_similarities_must_match_the_candidates() -> None:
    pool = [_line(0, "a"), _line(1, "b")]
    with pytest.raises(ValueError, match="1 similarities for 2"):
        fuse([], pool, [0.3])
