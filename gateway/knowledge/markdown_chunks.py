"""Markdown read into sections under its headings.

ATX headings (``#`` to ``######``, closing hashes dropped) and setext headings (a paragraph
underlined with ``===`` or ``---``) open a section; its heading path is the enclosing headings,
outermost first. Fenced code blocks (backticks or tildes) are kept whole, fences and
indentation included, and nothing inside them is a heading; a fence left open runs to the end,
as in CommonMark. A YAML front matter block at the very top, HTML comments (hidden when the
page is shown, so never meant for readers) and tables' delimiter rows are dropped. The title
is the first H1's text. Headings lose their inline markup (emphasis, code ticks; links read as
their text). Paragraphs are normalized: wrapped lines joined, list items and table rows kept
on their own lines, spaces collapsed. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from gateway.knowledge.chunking import OutlineBuilder, Section, collapse_spaces, join_prose_lines

__all__ = ["MarkdownOutline", "read_markdown"]

_ATX: Final = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSING: Final = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE: Final = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_SETEXT_H1: Final = re.compile(r"^ {0,3}=+[ \t]*$")
_SETEXT_H2: Final = re.compile(r"^ {0,3}-+[ \t]*$")
# A list can not be underlined into a heading: "- a" over "---" is a list and a rule.
_LIST_ITEM: Final = re.compile(r"^ {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_THEMATIC_BREAK: Final = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
# Links and images ("[text](url)", "![alt](src)") read as their text.
_LINK: Final = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# Emphasis: "**x**", "*x*", "__x__" and "_x_" at word edges (not snake_case's underscores).
_EMPHASIS: Final = re.compile(r"(\*{1,3}|(?<!\w)_{1,3})(\S(?:.*?\S)??)\1(?!\w)")
# A table's delimiter row ("|---|:--:|"): layout, not text.
_TABLE_DELIMITER: Final = re.compile(r"^(?=.*\|)(?=.*-)[ \t|:-]+$")
_FRONT_MATTER: Final = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class MarkdownOutline:
    """A Markdown document's first H1 (``None`` when it has none) and its sections."""

    title: str | None
    sections: tuple[Section, ...]


@dataclass(slots=True)
class _Reader:
    """One pass over the lines: the outline so far and the paragraph being read."""

    outline: OutlineBuilder = field(default_factory=OutlineBuilder)
    lines: list[str] = field(default_factory=list)
    in_comment: bool = False

    def uncommented(self, line: str) -> str:
        """``line`` without the parts inside HTML comments, which may span lines."""
        kept: list[str] = []
        while line:
            if self.in_comment:
                end = line.find("-->")
                if end < 0:
                    break
                line, self.in_comment = line[end + 3 :], False
            else:
                start = line.find("<!--")
                if start < 0:
                    kept.append(line)
                    break
                kept.append(line[:start])
                line, self.in_comment = line[start + 4 :], True
        return "".join(kept)

    def end_paragraph(self) -> None:
        self.outline.paragraph(join_prose_lines(self.lines))
        self.lines = []

    def heading(self, level: int, text: str) -> None:
        self.end_paragraph()
        self.outline.heading(level, text)


def read_markdown(text: str) -> MarkdownOutline:
    """The title and sections of the Markdown ``text``."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n").replace("\r", "\n"), count=1)
    lines = text.split("\n")
    reader = _Reader()
    index = 0
    while index < len(lines):
        line = reader.uncommented(lines[index])
        fence = _FENCE.match(line)
        if fence and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            reader.end_paragraph()
            index = _read_fence(lines, index, fence, reader)
            continue
        atx = _ATX.match(line)
        if atx:
            reader.heading(len(atx.group(1)), _heading_text(atx.group(2) or ""))
        elif _TABLE_DELIMITER.match(line):
            pass
        elif reader.lines and _SETEXT_H1.match(line) and not _LIST_ITEM.match(reader.lines[0]):
            _setext(reader, 1)
        elif reader.lines and _SETEXT_H2.match(line) and not _LIST_ITEM.match(reader.lines[0]):
            _setext(reader, 2)
        elif _THEMATIC_BREAK.match(line) or not line.strip():
            reader.end_paragraph()
        else:
            reader.lines.append(line)
        index += 1
    reader.end_paragraph()
    return MarkdownOutline(reader.outline.title, reader.outline.sections())


def _heading_text(raw: str) -> str:
    return _plain_inline(_ATX_CLOSING.sub("", raw.strip()))


def _plain_inline(text: str) -> str:
    """A heading's text without its inline markup: it becomes a title and a citation."""
    text = _LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    return collapse_spaces(text.replace("`", ""))


def _setext(reader: _Reader, level: int) -> None:
    # The whole paragraph above the underline is the heading, as in CommonMark.
    text = _plain_inline(" ".join(reader.lines))
    reader.lines = []
    reader.heading(level, text)


def _read_fence(lines: list[str], start: int, fence: re.Match[str], reader: _Reader) -> int:
    """Adds the code block opened at ``start`` as one paragraph; the index after it."""
    marker = fence.group(2)
    closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
    block = [lines[start].rstrip()]
    index = start + 1
    closed = False
    while index < len(lines) and not closed:
        block.append(lines[index].rstrip())
        closed = bool(closing.match(block[-1]))
        index += 1
    code = block[1:-1] if closed else block[1:]
    # A block with no code inside (only its fences) says nothing.
    if any(line.strip() for line in code):
        reader.outline.paragraph("\n".join(block))
    return index
