"""Relative time words are resolved against the day they were said, and only those."""

from __future__ import annotations

from datetime import date

import pytest

from context.dates import date_notes, day_text, with_date_notes

SAID = date(2023, 7, 15)  # a Saturday


@pytest.mark.parametrize(
    ("text", "notes"),
    [
        ("I went to a support group yesterday.", ("yesterday = 14 July 2023",)),
        ("See you tomorrow!", ("tomorrow = 16 July 2023",)),
        ("We met last Friday", ("last Friday = the Friday before 15 July 2023",)),
        ("joined last Tues", ("last Tues = the Tuesday before 15 July 2023",)),
        ("Last weekend was fun", ("Last weekend = the weekend before 15 July 2023",)),
        ("this past weekend", ("this past weekend = the weekend before 15 July 2023",)),
        ("I gave a talk last week", ("last week = the week before 15 July 2023",)),
        ("two weekends ago", ("two weekends ago = two weekends before 15 July 2023",)),
        ("a week ago", ("a week ago = the week before 15 July 2023",)),
        ("a few weeks ago", ("a few weeks ago = a few weeks before 15 July 2023",)),
        ("3 days ago", ("3 days ago = 12 July 2023",)),
        ("five years ago", ("five years ago = 2018",)),
        ("last month", ("last month = June 2023",)),
        ("next month in January", ("next month = August 2023",)),
        ("last year and next year", ("last year = 2022", "next year = 2024")),
        ("Fui ontem", ("ontem = 14 July 2023",)),
        ("yesterday, and yesterday again", ("yesterday = 14 July 2023",)),
    ],
)
def test_relative_words_resolve_against_the_day_said(text: str, notes: tuple[str, ...]) -> None:
    assert date_notes(text, SAID) == notes


@pytest.mark.parametrize(
    "text",
    ["The last sunset was lovely", "I love weekends", "Today was long", "in the past weeks", ""],
)
def test_words_that_name_no_day_get_no_note(text: str) -> None:
    assert date_notes(text, SAID) == ()


def test_months_and_years_roll_over() -> None:
    assert date_notes("last month", date(2023, 1, 10)) == ("last month = December 2022",)
    assert date_notes("next month", date(2022, 12, 31)) == ("next month = January 2023",)
    assert date_notes("yesterday", date(2023, 3, 1)) == ("yesterday = 28 February 2023",)
    assert day_text(date(2023, 5, 8)) == "8 May 2023"


def test_the_line_itself_is_kept_verbatim_before_its_notes() -> None:
    line = "[15 July 2023] Caroline: We went yesterday."
    noted = with_date_notes(line, "We went yesterday.", SAID)
    assert noted == f"{line} (yesterday = 14 July 2023)"
    assert with_date_notes("[15 July 2023] Caroline: Hi!", "Hi!", SAID).endswith("Hi!")
