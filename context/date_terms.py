"""Calendar terms, so a question about a time finds the lines of that time.

"What did Nate cook on 9 November 2022?" shares no word with the line it asks about, but the
line carries its date ("[9 Nov 2022] Nate: …"). Recall indexes each line's day as terms that no
word can produce (``@november``, ``@2022``, ``@november-9``) and turns the date expressions of
a question into the same terms, so BM25 weighs them like any other term: a year is common and
weighs little, a month more, a day most.

A line's days are the day it was said and the days its relative time words resolve to
(`context.dates`: "yesterday" said on 10 November is 9 November). In a question, a month name
counts only as a date: "may" and abbreviations ("Mar", "Jan") do so only beside a number or
after "in" ("may I ask" is not May, "Jan" may be a name). English and Portuguese month
names. Pure and deterministic.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Final

from context.dates import date_notes

__all__ = ["line_date_terms", "query_date_terms"]

_MONTHS: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_ALIASES: Final = {
    **{name: name for name in _MONTHS},
    **{name[:3]: name for name in _MONTHS if name != "may"},
    "sept": "september",
    "janeiro": "january",
    "fevereiro": "february",
    "marco": "march",
    "março": "march",
    "abril": "april",
    "maio": "may",
    "junho": "june",
    "julho": "july",
    "agosto": "august",
    "setembro": "september",
    "outubro": "october",
    "novembro": "november",
    "dezembro": "december",
}
# Words that are not always months.
_AMBIGUOUS: Final = frozenset({"may", "sept", *(name[:3] for name in _MONTHS)})
_MONTH: Final = "|".join(sorted(_ALIASES, key=len, reverse=True))
_DAY: Final = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR: Final = r"(?P<year>(?:19|20)\d\d)\b"
_PATTERN: Final = re.compile(
    r"(?:\b" + _DAY.format("day_before") + r"\s+(?:of\s+|de\s+)?)?"
    r"(?P<prefix>\bin\s+)?\b(?P<month>" + _MONTH + r")\b\.?"
    r"(?:\s+" + _DAY.format("day_after") + r"\b)?"
    r"(?:,?\s+(?:de\s+)?" + _YEAR + r")?"
    r"|\b" + _YEAR.replace("year", "lone_year"),
    re.IGNORECASE,
)


def line_date_terms(day: date, text: str = "") -> tuple[str, ...]:
    """The calendar terms of a line said on ``day``: its day, and the times its relative time
    words name (``text``; "yesterday" said on 10 May is 9 May, see `context.dates`)."""
    month = _MONTHS[day.month - 1]
    out = [f"@{day.year}", f"@{month}", f"@{month}-{day.day}"]
    for note in date_notes(text, day) if text else ():
        out.extend(query_date_terms(note.split(" = ", 1)[1]))
    return tuple(dict.fromkeys(out))


def query_date_terms(text: str) -> tuple[str, ...]:
    """The calendar terms of the date expressions in ``text`` (a month, a day of a month, a
    year): ``"on 25 May, 2022"`` → ``("@may", "@may-25", "@2022")``."""
    out: list[str] = []
    for match in _PATTERN.finditer(text):
        if match.group("lone_year"):
            out.append(f"@{match.group('lone_year')}")
            continue
        month = _ALIASES[match.group("month").casefold()]
        day = match.group("day_before") or match.group("day_after")
        year = match.group("year")
        word = match.group("month").casefold()
        if word in _AMBIGUOUS and not (day or year or match.group("prefix")):
            continue  # "may" the verb, "mar" the sea, "Jan" the name: a date only in a date

        out.append(f"@{month}")
        if day and 1 <= int(day) <= 31:
            out.append(f"@{month}-{int(day)}")
        if year:
            out.append(f"@{year}")
    return tuple(dict.fromkeys(out))
