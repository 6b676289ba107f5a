"""The inverted index ranks exactly like the direct scorer, on random candidate sets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st

from context.recall import RecallCandidate, rank_candidates
from context.recall_index import build_index

WORDS = [
    "pedido",
    "entrega",
    "pix",
    "chave",
    "caroline",
    "melanie",
    "research",
    "researching",
    "adoption",
    "camping",
    "4471",
    "cep",
    "boleto",
    "reembolso",
    "painting",
]
START = datetime(2023, 5, 8, tzinfo=UTC)


@st.composite
def candidates(draw: st.DrawFn) -> list[RecallCandidate]:
    count = draw(st.integers(min_value=0, max_value=40))
    out = []
    for index in range(count):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=8)))
        out.append(
            RecallCandidate(
                episode_id=f"e{draw(st.integers(0, 3))}",
                source_message_id=index + 1,
                kind=draw(st.sampled_from(["turn", "sentence"])),
                speaker=draw(st.sampled_from(["Caroline", "Melanie"])),
                text=text,
                at=START + timedelta(minutes=index),
            )
        )
    return out


@settings(max_examples=150, deadline=None)
@given(candidates(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
def test_index_ranking_equals_direct_ranking(pool: list[RecallCandidate], words: list[str]) -> None:
    query = " ".join(words)
    assert build_index(pool).rank(query) == rank_candidates(query, pool)


@settings(max_examples=100, deadline=None)
@given(candidates(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.integers(1, 10))
def test_a_limited_ranking_is_the_head_of_the_full_one(
    pool: list[RecallCandidate], words: list[str], limit: int
) -> None:
    query = " ".join(words)
    index = build_index(pool)
    assert index.rank(query, limit=limit) == index.rank(query)[:limit]


def test_spare_room_goes_only_to_lines_near_the_best_score() -> None:
    from context import TiktokenCounter, load_encoding
    from context.recall import RecallEpisode, pack

    counter = TiktokenCounter(load_encoding())
    episode = RecallEpisode("e0", "webchat", "typed", START, START)
    lines = [
        RecallCandidate(
            "e0", i + 1, "turn", "Caroline", f"linha número {i} " * 8, START + timedelta(minutes=i)
        )
        for i in range(6)
    ]
    ranked = [(10.0, lines[0]), (9.0, lines[1]), (1.0, lines[2]), (0.5, lines[3])]
    small = pack(ranked, {"e0": episode}, 60, counter)
    wide = pack(ranked, {"e0": episode}, 60, counter, extra=400, floor=0.2)
    shown = wide[0].text
    assert len(wide[0].text) > len(small[0].text)  # the spare room was used …
    assert "linha número 1" in shown
    assert "linha número 2" not in shown and "linha número 3" not in shown  # … not on filler


def _line(
    index: int, kind: Literal["turn", "sentence"], speaker: str, text: str
) -> RecallCandidate:
    return RecallCandidate("e0", index, kind, speaker, text, START + timedelta(minutes=index))


def test_a_hit_lifts_the_lines_around_it_of_its_own_kind() -> None:
    pool = [
        _line(1, "turn", "Nate", "The weather is nice today"),
        _line(2, "turn", "Joanna", "Mine is sunny"),
        _line(3, "turn", "Nate", "Any news?"),
        _line(4, "turn", "Nate", "What inspired you?"),
        _line(5, "turn", "Joanna", "A screenplay contest in Paris"),
        _line(6, "turn", "Nate", "Wow, congrats!"),
        _line(7, "turn", "Joanna", "Thanks a lot"),
        _line(8, "turn", "Nate", "When is it?"),
        _line(9, "turn", "Joanna", "Next spring"),
        _line(10, "sentence", "Joanna", "I adopted a puppy"),
        _line(11, "sentence", "Nate", "He is called Max"),
    ]
    for ranked in (rank_candidates("screenplay", pool), build_index(pool).rank("screenplay")):
        scores = {c.source_message_id: s for s, c in ranked}
        assert scores[5] > scores[6] > scores[7] > scores[8] > 0  # the replies to it …
        assert scores[5] > scores[4] > scores[3] > scores[2] > 0  # … and what led to it
        assert 1 not in scores and 9 not in scores  # three lines each way, no further
    ranked = build_index(pool).rank("puppy")
    assert [c.source_message_id for _, c in ranked] == [10, 11]  # sentences chain with sentences


def test_a_stemmed_word_finds_its_other_forms() -> None:
    pool = [
        _line(1, "turn", "John", "Jogging without any pain was a huge success"),
        _line(2, "sentence", "John", "I write articles about fantasy novels"),
    ]
    for query, expected in (("When did John jog again?", 1), ("What is John writing?", 2)):
        for ranked in (rank_candidates(query, pool), build_index(pool).rank(query)):
            assert [c.source_message_id for _, c in ranked] == [expected]


def test_a_date_in_the_question_finds_the_lines_of_that_day() -> None:
    day = datetime(2022, 11, 9, 18, tzinfo=UTC)
    pool = [
        RecallCandidate("e0", 1, "turn", "Nate", "I made coconut ice cream", day),
        RecallCandidate("e1", 2, "turn", "Nate", "I made pasta", day + timedelta(days=40)),
        RecallCandidate("e2", 3, "turn", "Nate", "I made soup yesterday", day + timedelta(days=1)),
        RecallCandidate("e3", 4, "turn", "Nate", "I made bread", day - timedelta(days=400)),
    ]
    for ranked in (
        rank_candidates("What did Nate make on 9 November, 2022?", pool),
        build_index(pool).rank("What did Nate make on 9 November, 2022?"),
    ):
        ids = [c.source_message_id for _, c in ranked]
        # that day first (the soup's "yesterday" is 9 November too), then the rest of 2022
        assert set(ids[:2]) == {1, 3} and ids[2:] == [2]


def test_a_named_speaker_outranks_what_was_said_to_them() -> None:
    pool = [
        _line(1, "turn", "Nate", "I love my turtles"),
        _line(2, "turn", "Joanna", "Your turtles are so cute"),
    ]
    ranked = build_index(pool).rank("What pets does Nate have? turtles")
    assert ranked[0][1].speaker == "Nate"


def test_a_recalled_line_resolves_its_relative_dates() -> None:
    from context.recall import line_of

    line = line_of(_line(1, "turn", "Caroline", "I went to a  support group yesterday."))
    assert line == (
        "[8 May 2023] Caroline: I went to a support group yesterday. (yesterday = 7 May 2023)"
    )
