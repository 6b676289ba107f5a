"""The one splitter of long replies: where it cuts, and properties over generated text (every
part within the limit, none empty, the text's words in order)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.splitting import Length, split_message, utf16_units

LENGTHS: dict[str, Length] = {"characters": len, "utf16": utf16_units}


def _slices(text: str, parts: list[str]) -> bool:
    """Whether the parts are the stripped text, in order, less only white space at the cuts."""
    rest = text.strip()
    for part in parts:
        if not rest.startswith(part):
            return False
        rest = rest[len(part) :].lstrip()
    return rest == ""


def test_a_short_text_is_one_part_and_blank_text_none() -> None:
    assert split_message("  Olá!  ", 1600) == ["Olá!"]
    assert split_message(" \n\t ", 1600) == []
    assert split_message("", 10) == []


def test_a_paragraph_break_is_preferred_to_a_line_break() -> None:
    text = "a" * 35 + "\n\n" + "b" * 10 + "\n" + "c" * 5 + ". " + "d" * 20
    assert split_message(text, 60) == ["a" * 35, "b" * 10 + "\n" + "c" * 5 + ". " + "d" * 20]


def test_a_line_break_is_preferred_to_a_sentence_end() -> None:
    text = "a" * 35 + "\n" + "b" * 10 + ". " + "c" * 30
    assert split_message(text, 60) == ["a" * 35, "b" * 10 + ". " + "c" * 30]


@pytest.mark.parametrize("mark", [".", "!", "?", "…"])
def test_a_sentence_end_keeps_its_punctuation(mark: str) -> None:
    text = "First sentence here" + mark + " Second one is a little longer than that"
    parts = split_message(text, 30)
    assert parts[0] == "First sentence here" + mark
    assert not parts[1].startswith(mark)
    assert parts[1].startswith("Second")


def test_a_period_not_followed_by_white_space_is_no_sentence_end() -> None:
    # "3.5" and "e.g" are not sentence ends: the last word boundary is used instead.
    text = "Version 3.5 is out now and e.g.x works"
    assert split_message(text, 30) == ["Version 3.5 is out now and", "e.g.x works"]


def test_a_sentence_end_just_past_the_limit_is_seen() -> None:
    # The period is the 20th character and white space follows it: it fits exactly.
    text = "abcdefghi klmnopqrs. tuvwxyz and more words"
    assert split_message(text, 20)[0] == "abcdefghi klmnopqrs."


def test_a_word_boundary_when_there_is_nothing_better() -> None:
    text = " ".join(f"palavra{i}" for i in range(1000))
    parts = split_message(text, 1600)
    assert len(parts) > 1 and all(len(p) <= 1600 for p in parts)
    assert " ".join(parts) == text


def test_a_break_in_the_first_half_is_not_used() -> None:
    # The only space is in the first half of the part: a hard cut keeps the parts full.
    text = "ab " + "c" * 40
    assert split_message(text, 20) == ["ab " + "c" * 17, "c" * 20, "c" * 3]


def test_the_utf16_limit_counts_astral_characters_twice() -> None:
    text = "😀" * 3000  # 6000 UTF-16 units, no boundary to cut at
    parts = split_message(text, 4096, utf16_units)
    assert [utf16_units(part) for part in parts] == [4096, 6000 - 4096]
    assert "".join(parts) == text
    odd = "a" + "😀" * 10  # 21 units: a cut at 10 units would fall inside an emoji
    parts = split_message(odd, 10, utf16_units)
    assert [utf16_units(p) for p in parts] == [9, 10, 2] and "".join(parts) == odd


def test_an_unpaired_high_and_low_surrogate_stay_together() -> None:
    text = "abc\ud83d\ude00def"
    assert split_message(text, 4) == ["abc", "\ud83d\ude00de", "f"]


def test_a_character_longer_than_the_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than the limit"):
        split_message("😀😀", 1, utf16_units)


_WORDS = st.text(alphabet=st.sampled_from("abcdeé😀"), min_size=1, max_size=6)
_GAPS = st.sampled_from([" ", "  ", "\n", "\n\n", " \n \n ", "\t", ". ", "! ", "? ", "… ", ", "])


@st.composite
def _prose(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, max_size=120))
    pieces: list[str] = [draw(st.sampled_from(["", " ", "\n"]))]
    for word in words:
        pieces += [word, draw(_GAPS)]
    return "".join(pieces)


@settings(max_examples=300, deadline=None)
@given(text=_prose(), limit=st.integers(30, 200), measure=st.sampled_from(sorted(LENGTHS)))
def test_words_come_back_in_order_within_the_limit(text: str, limit: int, measure: str) -> None:
    # Words of at most 12 units in parts of at least 30: a boundary is always in the second
    # half, so no word is ever cut and the words come back exactly.
    length = LENGTHS[measure]
    parts = split_message(text, limit, length)
    assert all(part and part == part.strip() for part in parts)
    assert all(length(part) <= limit for part in parts)
    assert " ".join(parts).split() == text.split()
    assert _slices(text, parts)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab😀 .!?…\n\t"), max_size=400),
    limit=st.integers(2, 60),
    measure=st.sampled_from(sorted(LENGTHS)),
)
def test_any_text_is_cut_into_slices_within_the_limit(text: str, limit: int, measure: str) -> None:
    length = LENGTHS[measure]
    parts = split_message(text, limit, length)
    assert all(part and part == part.strip() for part in parts)
    assert all(length(part) <= limit for part in parts)
    assert _slices(text, parts)
    squeeze = re.compile(r"\s+")
    assert squeeze.sub("", "".join(parts)) == squeeze.sub("", text)
