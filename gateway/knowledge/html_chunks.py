"""HTML read into sections under its h1-h6 headings, with the standard library's parser.

What is not the page's content is dropped: scripts, styles, navigation, asides, ``noscript``,
templates, embedded SVG and frames, buttons and selects, hidden elements (``hidden``,
``aria-hidden``, an inline ``display: none``), the same parts marked by ARIA roles, and the
site's header and footer. A ``header`` or ``footer`` inside an ``article`` or ``main`` is kept,
since there it holds the article's own heading and date. Block elements break paragraphs; list
items, ``br`` and table rows break lines (a list item starts with a dash, cells are joined by
bars); ``pre`` keeps its lines and spacing. Entities are decoded by the parser. The title is the
``<title>``, else the first h1. The encoding comes from the bytes (`html_charset`): a byte-order
mark, else a ``<meta>`` charset near the top, else UTF-8. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Final

from gateway.knowledge.chunking import OutlineBuilder, Section, collapse_spaces

__all__ = ["HtmlOutline", "html_charset", "read_html"]

_DROPPED: Final = frozenset(
    {
        "script",
        "style",
        "nav",
        "aside",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "button",
        "select",
    }
)
_PAGE_FRAME: Final = frozenset({"header", "footer"})
# The same parts marked by ARIA roles on plain elements, as templated sites do.
_DROPPED_ROLES: Final = frozenset({"navigation", "complementary", "search"})
_FRAME_ROLES: Final = frozenset({"banner", "contentinfo"})
_CONTENT: Final = frozenset({"article", "main"})
_HEADINGS: Final = {f"h{level}": level for level in range(1, 7)}
_BLOCKS: Final = frozenset(
    {
        "address", "article", "blockquote", "body", "caption", "dd", "details", "dialog",
        "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header",
        "hr", "legend", "main", "ol", "p", "section", "summary", "table", "ul",
    }
)  # fmt: skip
_LINES: Final = frozenset({"li", "br", "tr"})
_VOID: Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
     "track", "wbr"}
)  # fmt: skip
# The HTML standard looks for the charset in the first 1,024 bytes.
_PRESCAN_BYTES: Final = 1_024
_META_CHARSET: Final = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.I)


@dataclass(frozen=True, slots=True)
class HtmlOutline:
    """An HTML page's title (``<title>``, else first h1; ``None`` without either) and sections."""

    title: str | None
    sections: tuple[Section, ...]


def html_charset(body: bytes) -> str | None:
    """The charset a ``<meta>`` near the top of ``body`` declares, if any. A page that
    declares UTF-16 while its bytes are ASCII-compatible is UTF-8, as browsers read it."""
    found = _META_CHARSET.search(body[:_PRESCAN_BYTES])
    if found is None:
        return None
    charset = found.group(1).decode("ascii").lower()
    return "utf-8" if charset.startswith(("utf-16", "utf-32")) else charset


def read_html(text: str) -> HtmlOutline:
    """The title and sections of the HTML ``text``."""
    parser = _PageParser()
    parser.feed(text)
    parser.close()
    parser.end_paragraph()
    outline = parser.outline
    return HtmlOutline(parser.page_title or outline.title, outline.sections())


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.outline = OutlineBuilder()
        self.page_title: str | None = None
        self._skipping: list[str] = []
        self._content_depth = 0
        self._list_depth = 0
        self._pre_depth = 0
        self._lines: list[list[str]] = [[]]
        self._heading: tuple[int, list[str]] | None = None
        self._title: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skipping:
            # Same-named elements nest inside a dropped one; count them to find its end.
            if tag == self._skipping[-1] and tag not in _VOID:
                self._skipping.append(tag)
            return
        marks = dict(attrs)
        style = "".join((marks.get("style") or "").lower().split())
        hidden = tag not in _VOID and (
            "hidden" in marks
            or marks.get("aria-hidden") == "true"
            or "display:none" in style
            or "visibility:hidden" in style
        )
        role = marks.get("role")
        frame = (tag in _PAGE_FRAME or role in _FRAME_ROLES) and self._content_depth == 0
        if tag in _DROPPED or role in _DROPPED_ROLES or hidden or frame:
            self._skipping.append(tag)
            return
        if tag == "title":
            self._title = []
        elif tag in _HEADINGS:
            self.end_paragraph()
            self._heading = (_HEADINGS[tag], [])
        elif tag == "pre":
            self.end_paragraph()
            self._pre_depth += 1
        elif tag == "li" and not self._pre_depth:
            self._new_line()
            self._lines[-1] = ["- "]
        elif tag in _LINES:
            self._new_line()
        elif tag in ("td", "th") and self._line_has_text():
            self._append(" | ")
        elif tag in _BLOCKS:
            self._block_break()
        self._content_depth += tag in _CONTENT
        self._list_depth += tag in ("ul", "ol")

    def handle_endtag(self, tag: str) -> None:
        if self._skipping:
            if tag == self._skipping[-1]:
                self._skipping.pop()
            return
        if tag == "title" and self._title is not None:
            self.page_title = self.page_title or collapse_spaces("".join(self._title)) or None
            self._title = None
        elif tag in _HEADINGS and self._heading is not None:
            level, parts = self._heading
            self._heading = None
            self.outline.heading(level, collapse_spaces("".join(parts)))
        elif tag == "pre" and self._pre_depth:
            self._pre_depth -= 1
            if not self._pre_depth:
                self._end_pre()
        elif tag in ("li", "tr"):
            self._new_line()
        elif tag in _BLOCKS:
            self._block_break()
        self._content_depth = max(0, self._content_depth - (tag in _CONTENT))
        self._list_depth = max(0, self._list_depth - (tag in ("ul", "ol")))

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._title is not None:
            self._title.append(data)
        elif self._heading is not None:
            self._heading[1].append(data)
        else:
            self._append(data)

    def end_paragraph(self) -> None:
        lines = (collapse_spaces("".join(parts)) for parts in self._lines)
        self.outline.paragraph("\n".join(line for line in lines if line not in ("", "-")))
        self._lines = [[]]

    def _append(self, data: str) -> None:
        self._lines[-1].append(data)

    def _new_line(self) -> None:
        if self._pre_depth:
            self._append("\n")
        elif self._line_has_text():
            self._lines.append([])

    def _line_has_text(self) -> bool:
        # A list item's own marker is not text yet: its first paragraph goes on its line.
        return "".join(self._lines[-1]).strip() not in ("", "-")

    def _block_break(self) -> None:
        # Inside a list item a paragraph is a line of the item, not a paragraph of its own.
        if self._list_depth or self._pre_depth:
            self._new_line()
        else:
            self.end_paragraph()

    def _end_pre(self) -> None:
        raw = "".join(part for parts in self._lines for part in parts)
        self._lines = [[]]
        lines = [line.rstrip() for line in raw.replace("\r\n", "\n").split("\n")]
        while lines and not lines[0]:
            lines.pop(0)
        self.outline.paragraph("\n".join(lines).rstrip())
