"""Plain text read into paragraphs (blank lines apart), with its title when it shows one.

A plain text file has no headings to trust, so its chunks carry none. Its first line is its
title when that line stands alone (a blank line follows it and more text comes after), is
short (at most `TITLE_MAX_CHARS`) and does not end like a sentence (``.``, ``!``, ``?``, ``:``,
``;`` or ``,``): "Shipping policy" is a title, "Thanks for writing." is not. That line is then
left out of the chunks, which carry the title anyway. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gateway.knowledge.chunking import Section, collapse_spaces, paragraphs_of_lines

__all__ = ["TITLE_MAX_CHARS", "TextOutline", "read_text"]

TITLE_MAX_CHARS: Final = 80
_SENTENCE_ENDS: Final = tuple(".!?:;,")


@dataclass(frozen=True, slots=True)
class TextOutline:
    """A plain text's title line (``None`` when it shows none) and its one section."""

    title: str | None
    sections: tuple[Section, ...]


def read_text(text: str) -> TextOutline:
    """The title and the paragraphs of the plain ``text``."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    title = _title_line(lines)
    if title is not None:
        lines = lines[1:]
    paragraphs = paragraphs_of_lines(lines)
    sections = (Section((), tuple(paragraphs)),) if paragraphs else ()
    return TextOutline(title, sections)


def _title_line(lines: list[str]) -> str | None:
    if len(lines) < 3 or lines[1].strip():
        return None
    if not any(line.strip() for line in lines[2:]):
        return None
    first = collapse_spaces(lines[0])
    if len(first) > TITLE_MAX_CHARS or first.endswith(_SENTENCE_ENDS):
        return None
    return first
