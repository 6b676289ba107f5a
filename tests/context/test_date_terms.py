"""Calendar terms: the dates of a question and the days of a line meet as the same terms."""

from __future__ import annotations

from datetime import date

import pytest

from context.date_terms import line_date_terms, query_date_terms


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What did Nate do on 25 May, 2022?", ("@may", "@may-25", "@2022")),
        ("When did Melanie go camping in June?", ("@june",)),
        (
            "Where was John between August 11 and August 15 2023?",
            ("@august", "@august-11", "@august-15", "@2023"),
        ),
        ("What changed on the 3rd of March?", ("@march", "@march-3")),
        ("Qual pedido fiz em 9 de maio de 2023?", ("@may", "@may-9", "@2023")),
        ("Comprei em março", ("@march",)),
        ("Any charity event in 2024?", ("@2024",)),
        ("Sept. 3 was the launch", ("@september", "@september-3")),
        ("Jan 5", ("@january", "@january-5")),
    ],
)
def test_date_expressions_of_a_question(question: str, expected: tuple[str, ...]) -> None:
    assert query_date_terms(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        "May I change my order?",
        "You may call me",
        "Jan said the parcel is late",
        "Fui ao mar",
        "Order 12 of 40",
        "Room 305, floor 12",
    ],
)
def test_words_that_are_not_always_months_are_dates_only_in_a_date(question: str) -> None:
    assert query_date_terms(question) == ()


def test_in_makes_may_a_month() -> None:
    assert query_date_terms("What happened in May?") == ("@may",)


def test_a_line_has_its_day_and_the_days_its_time_words_name() -> None:
    assert line_date_terms(date(2023, 5, 10)) == ("@2023", "@may", "@may-10")
    terms = line_date_terms(date(2023, 5, 10), "I went there yesterday, and last month too")
    assert terms == ("@2023", "@may", "@may-10", "@may-9", "@april")
    assert line_date_terms(date(2023, 1, 2), "Last year was hard") == (
        "@2023",
        "@january",
        "@january-2",
        "@2022",
    )
