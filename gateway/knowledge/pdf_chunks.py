"""PDF read into sections, one per page, through pypdf.

A PDF's headings cannot be told reliably from its text (a bold line is not marked as a
heading), so each page is a section whose heading is its number ("Page 3"). Paragraphs are
found from where the lines sit: a gap between lines wider than 1.5 times the page's usual line
spacing, or a jump back up the page (a new column), starts a new paragraph; a word hyphenated
across lines is joined. Running heads and feet are dropped: a first or last line that recurs,
numbers aside, on at least half of the pages, or that is only a page number. The title is the
document information's /Title. A PDF encrypted with a password, or whose pages hold no text
(scans without a text layer), is refused with the reason. Pure: the bytes are read in memory,
but a long PDF takes CPU time (about 20 ms a page), so callers on an event loop use a thread.
"""

from __future__ import annotations

import io
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from pypdf import PageObject, PasswordType, PdfReader

from gateway.knowledge.chunking import Section, join_prose_lines

__all__ = ["PdfOutline", "PdfUnreadable", "read_pdf"]

# A line gap this many times the page's usual spacing ends a paragraph.
_PARAGRAPH_GAP: Final = 1.5
# pypdf reads a header anywhere in the first kilobyte, as other readers do.
_HEADER_WINDOW: Final = 1_024


class PdfUnreadable(ValueError):
    """The bytes are not a PDF this module can read; the message says why."""


@dataclass(frozen=True, slots=True)
class PdfOutline:
    """A PDF's /Title (``None`` without one) and one section per page with text."""

    title: str | None
    sections: tuple[Section, ...]


def read_pdf(body: bytes) -> PdfOutline:
    """The title and pages of the PDF ``body``; raises `PdfUnreadable`."""
    if b"%PDF-" not in body[:_HEADER_WINDOW]:
        raise PdfUnreadable("the body is not a PDF (no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(body))
        _decrypt(reader)
        pages = [_LineCollector.lines_of(page) for page in reader.pages]
        sections = tuple(
            Section((f"Page {number}",), tuple(paragraphs))
            for number, lines in enumerate(_without_running_lines(pages), start=1)
            if (paragraphs := _paragraphs(lines))
        )
        title = reader.metadata.title if reader.metadata else None
    except PdfUnreadable:
        raise
    except Exception as error:  # noqa: BLE001
        # pypdf raises many types on a damaged file (its own errors, but also KeyError,
        # ValueError, TypeError, RecursionError); to the caller each means the same.
        raise PdfUnreadable(f"the PDF is damaged and cannot be read ({error})") from error
    if not sections:
        raise PdfUnreadable(
            "the PDF has no text to read (scanned pages without a text layer?)"
            if reader.pages
            else "the PDF has no pages"
        )
    return PdfOutline(title=_useful_title(str(title or "")), sections=sections)


def _useful_title(title: str) -> str | None:
    """The /Title, unless it is what office software writes when nobody set one ("Microsoft
    Word - Document1.docx", "untitled"); an office prefix and a file extension are dropped."""
    title = _OFFICE_PREFIX.sub("", " ".join(title.split()))
    title = _FILE_EXTENSION.sub("", title).strip()
    return None if _PLACEHOLDER_TITLE.match(title) else title


def _decrypt(reader: PdfReader) -> None:
    if not reader.is_encrypted:
        return
    # A PDF that only restricts printing or copying opens with the empty user password.
    try:
        opened = reader.decrypt("")
    except Exception as error:  # noqa: BLE001
        raise PdfUnreadable(f"the PDF is encrypted and cannot be opened ({error})") from error
    if opened == PasswordType.NOT_DECRYPTED:
        raise PdfUnreadable("the PDF is encrypted with a password; upload it without one")


_OFFICE_PREFIX: Final = re.compile(r"^Microsoft (?:Word|PowerPoint|Excel) - ", re.IGNORECASE)
_FILE_EXTENSION: Final = re.compile(
    r"\.(?:docx?|pptx?|xlsx?|odt|odp|rtf|pdf|txt|md|html?|indd|pages)$", re.IGNORECASE
)
_PLACEHOLDER_TITLE: Final = re.compile(
    r"^(?:|untitled|sem t[ií]tulo|document|documento|title|t[ií]tulo|presentation)"
    r"(?:[\s_-]*\d+)?$",
    re.IGNORECASE,
)
_DIGITS: Final = re.compile(r"\d+")
_PAGE_NUMBER: Final = re.compile(
    r"^(?:page|p\.|p[aá]gina|p[aá]g\.)?\s*[-\u2013]?\s*(?:\d+|[ivxlc]+)"
    r"(?:\s*(?:of|de|/)\s*\d+)?\s*[-\u2013]?$",
    re.IGNORECASE,
)
_HYPHENATED: Final = re.compile(r"[^\W\d_]-$")
# Running lines are looked for only in documents of at least this many pages with text.
_RUNNING_MIN_PAGES: Final = 3
# With fewer line gaps than this on a page, the usual spacing is taken from the type size
# (1.2 times it, the common leading) rather than from the gaps themselves.
_FEW_GAPS: Final = 3
_LEADING: Final = 1.2


@dataclass(frozen=True, slots=True)
class _Line:
    """A line as it sits on its page: its baseline's height and its type size in points
    (``None`` when unknown), and its text."""

    y: float | None
    size: float | None
    text: str


@dataclass(slots=True)
class _LineCollector:
    """The lines of one page's text, gathered from pypdf's text visitor."""

    lines: list[_Line] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _y: float | None = None
    _size: float | None = None

    @classmethod
    def lines_of(cls, page: PageObject) -> list[_Line]:
        collector = cls()
        page.extract_text(visitor_text=collector.visit)
        collector.end_line()
        return collector.lines

    def visit(self, text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        pieces = text.split("\n")
        for index, piece in enumerate(pieces):
            if piece.strip() and self._y is None:
                # The text matrix's origin in page space (text matrix times current matrix).
                self._y = float(tm[4]) * float(cm[1]) + float(tm[5]) * float(cm[3]) + float(cm[5])
                self._size = abs(float(size) * float(tm[3]) * float(cm[3])) or None
            self._parts.append(piece)
            if index < len(pieces) - 1:
                self.end_line()

    def end_line(self) -> None:
        text = " ".join("".join(self._parts).split())
        if text:
            self.lines.append(_Line(self._y, self._size, text))
        self._parts = []
        self._y = self._size = None


def _without_running_lines(pages: list[list[_Line]]) -> list[list[_Line]]:
    """``pages`` without the first and last lines that recur on at least half of them."""
    with_text = [lines for lines in pages if lines]
    running: set[str] = set()
    if len(with_text) >= _RUNNING_MIN_PAGES:
        seen = Counter(
            shape for lines in with_text for shape in {_shape(lines[0]), _shape(lines[-1])}
        )
        running = {shape for shape, count in seen.items() if count * 2 >= len(with_text)}

    def is_running(line: _Line) -> bool:
        return _shape(line) in running or bool(_PAGE_NUMBER.match(line.text))

    trimmed = []
    for lines in pages:
        start = 1 if lines and is_running(lines[0]) else 0
        end = len(lines) - 1 if len(lines) > start and is_running(lines[-1]) else len(lines)
        trimmed.append(lines[start:end])
    return trimmed


def _shape(line: _Line) -> str:
    # "Page 3 of 9" and "Page 4 of 9" are the same running line.
    return _DIGITS.sub("#", line.text.lower())


def _paragraphs(lines: list[_Line]) -> list[str]:
    """The page's lines grouped into paragraphs by the gaps between them."""
    usual = _usual_spacing(lines)
    paragraphs: list[list[str]] = []
    previous: float | None = None
    for line in lines:
        step = None if previous is None or line.y is None else previous - line.y
        if not paragraphs or (step is not None and (step < 0 or step > usual * _PARAGRAPH_GAP)):
            paragraphs.append([])
        previous = line.y if line.y is not None else previous
        if paragraphs[-1] and _HYPHENATED.search(paragraphs[-1][-1]) and line.text[:1].islower():
            paragraphs[-1][-1] = paragraphs[-1][-1][:-1] + line.text
        else:
            paragraphs[-1].append(line.text)
    return [text for group in paragraphs if (text := join_prose_lines(group))]


def _usual_spacing(lines: list[_Line]) -> float:
    heights = [line.y for line in lines]
    steps = [
        above - below
        for above, below in zip(heights, heights[1:], strict=False)
        if above is not None and below is not None and above > below
    ]
    sizes = [line.size for line in lines if line.size is not None]
    if len(steps) < _FEW_GAPS and sizes:
        return statistics.median(sizes) * _LEADING
    return statistics.median(steps) if steps else 0.0
