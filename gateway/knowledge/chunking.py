"""Sections of a read document packed into chunks no longer than `MAX_CHUNK_CHARS`.

Every format's reader ends here: it yields sections (the headings above a run of paragraphs,
outermost first) and this module packs each section's paragraphs into chunks. Paragraphs are
kept together while they fit; a paragraph longer than the bound is split at line ends (code,
lists), then at sentence ends, then between words, and only a single word longer than the
bound (a token, a long URL) is cut inside. A section without text yields no chunk. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from gateway.knowledge.records import Chunk

__all__ = [
    "MAX_CHUNK_CHARS",
    "OutlineBuilder",
    "Section",
    "chunks_of",
    "collapse_spaces",
    "join_prose_lines",
    "paragraphs_of_lines",
]

# About 300 tokens: small enough that a retrieved chunk costs little room, large enough to
# hold a help-center answer whole.
MAX_CHUNK_CHARS: Final = 1_200

_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
# A line that starts a new line even inside a paragraph: list items (bullets of PDFs
# included) and table rows.
_LINE_START: Final = re.compile(r"^(?:[-*+]\s|[\u2022\u25e6\u25aa\u2023]|\d{1,9}[.)]\s|\|)")

# Splits a text too long for one piece into pieces of at most the limit.
_Splitter = Callable[[str, int], Iterator[str]]


@dataclass(frozen=True, slots=True)
class Section:
    """A run of paragraphs under the same headings (outermost first)."""

    headings: tuple[str, ...]
    paragraphs: tuple[str, ...]


@dataclass(slots=True)
class OutlineBuilder:
    """Sections gathered from a reader's headings and paragraphs in document order; the first
    H1 is kept as the document's title."""

    title: str | None = None
    _path: list[tuple[int, str]] = field(default_factory=list)
    _paragraphs: list[str] = field(default_factory=list)
    _sections: list[Section] = field(default_factory=list)

    def paragraph(self, text: str) -> None:
        if text.strip():
            self._paragraphs.append(text)

    def heading(self, level: int, text: str) -> None:
        """Opens a section under ``text`` at ``level`` (1 to 6), closing the deeper ones."""
        self._end_section()
        while self._path and self._path[-1][0] >= level:
            self._path.pop()
        # An empty heading closes the deeper sections but names nothing.
        if text:
            self._path.append((level, text))
            if level == 1 and self.title is None:
                self.title = text

    def sections(self) -> tuple[Section, ...]:
        self._end_section()
        return tuple(self._sections)

    def _end_section(self) -> None:
        if self._paragraphs:
            headings = tuple(text for _, text in self._path)
            self._sections.append(Section(headings, tuple(self._paragraphs)))
        self._paragraphs = []


def collapse_spaces(text: str) -> str:
    """``text`` on one line, its runs of whitespace made one space."""
    return " ".join(text.split())


def join_prose_lines(lines: Iterable[str]) -> str:
    """The lines of one paragraph as its text: wrapped prose joined into one line, list items
    and table rows kept on lines of their own, spaces collapsed."""
    out: list[str] = []
    for raw in lines:
        line = collapse_spaces(raw)
        if not line:
            continue
        if out and not _LINE_START.match(line):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return "\n".join(out)


def paragraphs_of_lines(lines: Iterable[str]) -> list[str]:
    """Lines grouped into paragraphs at blank lines, each paragraph normalized."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append(join_prose_lines(current))
            current = []
    return [p for p in paragraphs if p]


def chunks_of(sections: Iterable[Section], *, limit: int = MAX_CHUNK_CHARS) -> tuple[Chunk, ...]:
    """The sections' paragraphs packed into chunks of at most ``limit`` characters, numbered
    in document order."""
    chunks: list[Chunk] = []
    for section in sections:
        for text in _packed(section.paragraphs, limit):
            chunks.append(Chunk(position=len(chunks), headings=section.headings, text=text))
    return tuple(chunks)


def _packed(paragraphs: Iterable[str], limit: int) -> Iterator[str]:
    current = ""
    for paragraph in paragraphs:
        # Leading spaces stay: they are a code block's indentation.
        for piece in _pieces(paragraph.rstrip().lstrip("\n"), limit):
            if not current:
                current = piece
            elif len(current) + 2 + len(piece) <= limit:
                current = f"{current}\n\n{piece}"
            else:
                yield current
                current = piece
    if current:
        yield current


def _pieces(paragraph: str, limit: int) -> Iterator[str]:
    """``paragraph`` whole when it fits, else cut at the coarsest boundary that fits."""
    if not paragraph:
        return
    if len(paragraph) <= limit:
        yield paragraph
        return
    if "\n" in paragraph:
        yield from _greedy(paragraph.split("\n"), "\n", limit, _sentence_pieces)
    else:
        yield from _sentence_pieces(paragraph, limit)


def _sentence_pieces(text: str, limit: int) -> Iterator[str]:
    return _greedy(_SENTENCE_END.split(text.strip()), " ", limit, _word_pieces)


def _word_pieces(text: str, limit: int) -> Iterator[str]:
    return _greedy(text.split(), " ", limit, _hard_pieces)


def _hard_pieces(word: str, limit: int) -> Iterator[str]:
    # Only a single word longer than the whole bound reaches here.
    for start in range(0, len(word), limit):
        yield word[start : start + limit]


def _greedy(
    parts: list[str],
    separator: str,
    limit: int,
    finer: _Splitter,
) -> Iterator[str]:
    """``parts`` joined by ``separator`` into pieces as long as fit; a part too long alone is
    split by ``finer``."""
    current = ""
    for part in parts:
        part = part.rstrip()
        if not part.strip():
            continue
        if len(part) > limit:
            if current:
                yield current
                current = ""
            yield from finer(part.strip(), limit)
        elif not current:
            current = part
        elif len(current) + len(separator) + len(part) <= limit:
            current = f"{current}{separator}{part}"
        else:
            yield current
            current = part
    if current:
        yield current
