"""Relative time words resolved against the day a line was said.

A recalled line "[8 May 2023] Caroline: I went to a support group yesterday." is read months
later, when "yesterday" no longer points anywhere; the reader would have to do the calendar
arithmetic. `date_notes` does it once: ``("yesterday = 7 May 2023",)``. A note never guesses
past what the words say: "last Friday" is "the Friday before 15 July 2023", "last week" is "the
week before 9 June 2023", "two weeks ago" is "two weeks before 9 June 2023"; only days, months
and years are turned into calendar dates. Pure and deterministic.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Final

__all__ = ["date_notes", "day_text", "with_date_notes"]

_WEEKDAYS: Final = {
    "mon": "Monday",
    "tue": "Tuesday",
    "wed": "Wednesday",
    "thu": "Thursday",
    "fri": "Friday",
    "sat": "Saturday",
    "sun": "Sunday",
}
_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_WEEKDAY: Final = (
    r"(?:monday|mon|tuesday|tues|tue|wednesday|wed|thursday|thurs|thu|friday|fri|saturday|sat"
    r"|sunday|sun)\b"
)
_COUNT: Final = (
    r"(?:\d{1,2}|a\s+few|a\s+couple\s+of|couple\s+of|few|a|an|one|two|three|four|five|six"
    r"|seven|eight|nine|ten)"
)
_PATTERN: Final = re.compile(
    r"\b(?:"
    r"(?P<yesterday>yesterday|last\s+night|ontem)"
    r"|(?P<tomorrow>tomorrow|amanh[ãa])"
    r"|(?:last|this\s+past|past)\s+(?P<past_weekday>" + _WEEKDAY + r")"
    r"|(?:next|this\s+coming)\s+(?P<next_weekday>" + _WEEKDAY + r")"
    r"|(?P<last_weekend>(?:last|this\s+past|past)\s+weekend)"
    r"|(?P<next_weekend>next\s+weekend)"
    r"|(?P<this_weekend>this\s+weekend)"
    r"|(?P<last_week>(?:last|this\s+past|past)\s+week)\b"
    r"|(?P<next_week>next\s+week)\b"
    r"|(?P<last_month>last\s+month)"
    r"|(?P<next_month>next\s+month)"
    r"|(?P<last_year>last\s+year)"
    r"|(?P<next_year>next\s+year)"
    r"|(?P<count>" + _COUNT + r")\s+(?P<unit>day|week|weekend|month|year)s?\s+ago"
    r")\b",
    re.IGNORECASE,
)


def day_text(day: date) -> str:
    """``8 May 2023``: the form dates take in recalled lines and summaries."""
    return f"{day.day} {day:%B %Y}"


def _month_text(day: date, shift: int) -> str:
    index = day.year * 12 + day.month - 1 + shift
    return f"{date(index // 12, index % 12 + 1, 1):%B %Y}"


def _count(raw: str) -> int | None:
    words = " ".join(raw.casefold().split())
    if words.isdigit():
        return int(words)
    return _NUMBERS.get(words)


def _ago(raw_count: str, unit: str, day: date) -> str:
    count = _count(raw_count)
    words = " ".join(raw_count.split())
    unit = unit.casefold()
    if count is None:  # "a few weeks ago": only the direction is known
        return f"{words} {unit}s before {day_text(day)}"
    if unit == "day":
        return day_text(day - timedelta(days=count))
    if unit == "month":
        return _month_text(day, -count)
    if unit == "year":
        return str(day.year - count)
    if count == 1:  # "a week ago": the week before
        return f"the {unit} before {day_text(day)}"
    return f"{words} {unit}s before {day_text(day)}"


def _resolve(match: re.Match[str], day: date) -> str | None:
    kind = match.lastgroup
    said = day_text(day)
    if kind == "yesterday":
        return day_text(day - timedelta(days=1))
    if kind == "tomorrow":
        return day_text(day + timedelta(days=1))
    if kind == "past_weekday":
        return f"the {_WEEKDAYS[match.group(kind)[:3].casefold()]} before {said}"
    if kind == "next_weekday":
        return f"the {_WEEKDAYS[match.group(kind)[:3].casefold()]} after {said}"
    if kind == "last_weekend":
        return f"the weekend before {said}"
    if kind == "next_weekend":
        return f"the weekend after {said}"
    if kind == "this_weekend":
        return f"the weekend of {said}"
    if kind == "last_week":
        return f"the week before {said}"
    if kind == "next_week":
        return f"the week after {said}"
    if kind == "last_month":
        return _month_text(day, -1)
    if kind == "next_month":
        return _month_text(day, 1)
    if kind == "last_year":
        return str(day.year - 1)
    if kind == "next_year":
        return str(day.year + 1)
    if kind == "unit":
        return _ago(match.group("count"), match.group("unit"), day)
    return None


def date_notes(text: str, day: date) -> tuple[str, ...]:
    """``("yesterday = 7 May 2023", …)`` for the relative time words of ``text`` said on
    ``day``, in order of appearance, each once."""
    notes: list[str] = []
    for match in _PATTERN.finditer(text):
        resolved = _resolve(match, day)
        if resolved is None:
            continue
        note = f"{' '.join(match.group(0).split())} = {resolved}"
        if note not in notes:
            notes.append(note)
    return tuple(notes)


def with_date_notes(line: str, text: str, day: date) -> str:
    """``line`` with the notes of ``text`` appended in brackets (the line itself unchanged)."""
    notes = date_notes(text, day)
    if not notes:
        return line
    return f"{line} ({'; '.join(notes)})"
