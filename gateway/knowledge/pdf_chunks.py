"""PDF read into sections, one per page, through pypdf.

A PDF's headings cannot be told reliably from its text (a bold line is not marked as a
heading), so each page is a section whose heading is its number ("Page 3"). Paragraphs are
found from where the lines sit: a gap between lines wider than 1.5 times the page's usual line
spacing, or a jump back up the page (a new column), starts a new paragraph. The title is the
document information's /Title. A PDF encrypted with a password, or whose pages hold no text
(scans without a text layer), is refused with the reason. Pure: the bytes are read in memory.
"""

from __future__ import annotations

import io
import statistics
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
        sections = tuple(
            Section((f"Page {number}",), tuple(paragraphs))
            for number, page in enumerate(reader.pages, start=1)
            if (paragraphs := _LineCollector.paragraphs_of(page))
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
    return PdfOutline(title=str(title) if title else None, sections=sections)


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


@dataclass(slots=True)
class _LineCollector:
    """The lines of one page's text, each with the height it sits at on the page."""

    lines: list[tuple[float | None, str]] = field(default_factory=list)
    _parts: list[str] = field(default_factory=list)
    _y: float | None = None

    @classmethod
    def paragraphs_of(cls, page: PageObject) -> list[str]:
        collector = cls()
        page.extract_text(visitor_text=collector.visit)
        collector.end_line()
        return collector.paragraphs()

    def visit(self, text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        pieces = text.split("\n")
        for index, piece in enumerate(pieces):
            if piece.strip() and self._y is None:
                # The text matrix's origin in page space (text matrix times current matrix).
                self._y = float(tm[4]) * float(cm[1]) + float(tm[5]) * float(cm[3]) + float(cm[5])
            self._parts.append(piece)
            if index < len(pieces) - 1:
                self.end_line()

    def end_line(self) -> None:
        line = "".join(self._parts)
        if line.strip():
            self.lines.append((self._y, line))
        self._parts = []
        self._y = None

    def paragraphs(self) -> list[str]:
        heights = [y for y, _ in self.lines]
        steps = [
            above - below
            for above, below in zip(heights, heights[1:], strict=False)
            if above is not None and below is not None and above > below
        ]
        usual = statistics.median(steps) if steps else 0.0
        paragraphs: list[list[str]] = []
        previous: float | None = None
        for y, line in self.lines:
            step = None if previous is None or y is None else previous - y
            if not paragraphs or (step is not None and (step < 0 or step > usual * _PARAGRAPH_GAP)):
                paragraphs.append([])
            paragraphs[-1].append(line)
            previous = y if y is not None else previous
        return [text for lines in paragraphs if (text := join_prose_lines(lines))]
