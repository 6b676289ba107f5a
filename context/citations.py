"""What a reply citing the knowledge base may say: the numbers the model cites (`[k3]`) turned
back into the documents the window numbered, and every URL the model wrote taken out.

The model never gives a link: it cites the numbers of the knowledge lines it was shown, and the
gateway adds each cited document's title and URL (`context.citation_render`). So a number that
was not in the window is dropped, and a URL in the model's words is removed wherever it came
from (a document's text, the customer, a guess): only the documents' own links reach the
customer, from the sources list.

Markers are read leniently, as models write them: `[k3]`, `[K3]`, `[k 3]`, `【k3】`, `[k1, k3]`,
`[k1][k2]`; a marker the model made a link of (`[k3](https://…)`) is read as the marker. The
ones kept are renumbered `[1]`, `[2]` in the order the documents are first cited; two lines of
one document are one source. A bare `[3]` is dropped, never read as `[k3]`: the reply's own
`[1]`, `[2]` are in the history the model sees, so a bare number may be copied from an earlier
reply and name another document.

URLs are `http`, `https` and `ftp` URLs, `www.` names, a bare domain with a path
(`example.com/returns`) or with a common top-level domain (`açaí.com.br`), angle-bracket
autolinks, and the target of a Markdown link or image (its text is kept). An e-mail address is
not a URL: it is how a customer writes to the business, and it is kept. Decimal numbers
(`4.5`), times (`10:30`), file names (`manual.pdf`) and names such as `Node.js` or `ASP.NET`
are not domains: a bare name counts only with a path or a lowercase common top-level domain.

Taking text out leaves the reply readable: no double space, no space before punctuation, no
empty brackets, no line left with a bullet alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from context.knowledge_refs import KnowledgeRef

__all__ = [
    "CitedReply",
    "CitedSource",
    "cited_while_written",
    "resolve_citations",
    "source_marker",
]


@dataclass(frozen=True, slots=True)
class CitedSource:
    """A document the reply cites: `number` is the `n` of its `[n]` in the reply's text."""

    number: int
    document_id: str
    title: str
    url: str | None


@dataclass(frozen=True, slots=True)
class CitedReply:
    """A reply with its citations resolved: `text` cites `[1]`, `[2]` in the order of
    `sources`; `dropped_markers` counts the cited numbers not in the window, `removed_urls`
    the URLs the model wrote."""

    text: str
    sources: tuple[CitedSource, ...]
    dropped_markers: int
    removed_urls: int


def source_marker(number: int) -> str:
    """How a resolved citation reads in a reply: ``[2]``."""
    return f"[{number}]"


# Stands for text taken out until the gaps are closed; never in a reply (it is stripped first).
_GAP: Final = "\x00"

# One cited number: `k3`, `K 3`, or a bare `3` (read to be dropped). Three digits at most: a
# year in brackets is no citation.
_ITEM: Final = r"(?:[kK][ \t]*)?\d{1,3}"
_ITEMS: Final = rf"{_ITEM}(?:[ \t]*[,;、，][ \t]*{_ITEM})*"
_GROUP: Final = rf"[\[【［][ \t]*{_ITEMS}[ \t]*[\]】］]"
_RUN: Final = re.compile(rf"{_GROUP}(?:[ \t]*{_GROUP})*")
_CITED: Final = re.compile(r"(?P<k>[kK])?[ \t]*(?P<number>\d+)")
_ITEMS_ONLY: Final = re.compile(_ITEMS)

# Characters a URL may hold as written in running text (quotes and brackets end it, the wide
# ones a marker may be written in too).
_URL_CHARS: Final = r"[^\s<>\"'\[\]{}|\\^`\x00【】［］]"
# No word boundary before either: a URL glued to a word (`Vejahttps://…`) is a URL still.
_SCHEME_URL: Final = rf"(?i:(?:https?|ftp)://){_URL_CHARS}*"
_WWW_URL: Final = rf"(?i:www\.){_URL_CHARS}+"
_LABEL: Final = r"[^\W_](?:[\w-]{0,61}[^\W_])?"  # letters of any script: `açaí.com.br`
# Not after `@` (an e-mail address), `.` or a word character (inside a longer name), or `/`
# (inside a path); not before `@` or a word character (the local part of an address).
_BARE_URL: Final = re.compile(
    rf"(?<![@\w.\-/])(?:{_LABEL}\.)+(?P<tld>[a-zA-Z]{{2,24}})(?![\w@-])"
    rf"(?P<rest>(?::\d{{1,5}})?(?:/{_URL_CHARS}*)?)"
)
_URL: Final = re.compile(rf"{_SCHEME_URL}|{_WWW_URL}")
# `[text](url)`, `[text](<url> "title")`, `![alt](url)`; the text may hold a bracketed marker.
_MARKDOWN_LINK: Final = re.compile(
    r"!?\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\([ \t]*<?(?P<target>[^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'))?[ \t]*\)"
)
# A Markdown reference definition, `[1]: https://… "title"` on a line of its own (its target a
# URL: `[k1]: Trocas` is a marker and its words).
_REFERENCE_DEFINITION: Final = re.compile(
    r"(?m)^[ \t]*\[(?P<label>[^\]\n]+)\]:[ \t]*<?"
    r"(?:(?i:(?:https?|ftp)://|www\.)\S*|[^\s/<>]+\.[a-zA-Z]{2,}(?:/\S*)?)>?"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$"
)
# A reference-style link, `[text][label]`: its label is read against the definitions removed.
_REFERENCE_LINK: Final = re.compile(r"\[(?P<text>[^\[\]\n]+)\]\[(?P<label>[^\[\]\n]+)\]")
_AUTOLINK: Final = re.compile(rf"<[ \t]*(?:{_SCHEME_URL}|{_WWW_URL})[ \t]*>")

# Top-level domains a bare name counts as a domain with (no path needed): a few generic ones and
# the countries of Relaydesk's languages whose code is no word in them (`eu`, `ao`, `me`, `de`
# are Portuguese or Spanish words, and a missing space after a full stop must not make a name).
_COMMON_TLDS: Final = frozenset("com net org info biz io gov edu br pt uk".split())
# Punctuation after a URL that belongs to the sentence (ASCII, typographic and full-width).
_TRAILING: Final = ".,;:!?*_~…”’»。，、；：！？"
_CLOSES_BEFORE: Final = frozenset(".,;:!?)]}…”’»。，、；：！？）")
_EMPTY_BRACKETS: Final = re.compile(r"[(\[“‘«\"'][ \t]*\x00+[ \t]*[)\]”’»\"']")
_EMPHASIS_AROUND: Final = re.compile(r"([*_~`]+)\x00+\1")
_GAP_RUN: Final = re.compile(r"(?P<lead>[ \t]*)\x00(?:[ \t]*\x00)*(?P<trail>[ \t]*)")
# What the end of a streamed reply may still be writing: a bracket not closed yet (a marker, a
# link's text, or its target after `](`), or the last word (a URL half written).
_UNFINISHED_TAIL: Final = re.compile(r"(?:[\[【［][^\]】］\n]*(?:[\]】］]\([^)\n]*)?|\S*)$")
_BULLET_ALONE: Final = re.compile(r"^[ \t]*(?:[-*•+]|\d+[.)])?[ \t]*$")


def _split_trailing(url: str) -> tuple[str, str]:
    """A URL as matched in running text, and the punctuation after it that belongs to the
    sentence (a closing parenthesis only when the URL did not open one)."""
    end = len(url)
    while end > 0:
        last = url[end - 1]
        if last in _TRAILING:
            end -= 1
        elif last == ")" and url[:end].count("(") < url[:end].count(")"):
            end -= 1
        else:
            break
    return url[:end], url[end:]


class _Resolver:
    """One reply's pass: the documents cited so far and what was taken out."""

    def __init__(self, refs: Sequence[KnowledgeRef]) -> None:
        self._refs: dict[int, KnowledgeRef] = {}
        for ref in refs:
            self._refs.setdefault(ref.number, ref)
        self._numbers: dict[str, int] = {}  # document id -> its number in the reply
        self.sources: list[CitedSource] = []
        self.dropped_markers = 0
        self.removed_urls = 0
        self._labels: set[str] = set()  # of the reference definitions removed

    def markdown_link(self, match: re.Match[str]) -> str:
        text, target = match.group("text"), match.group("target")
        if target:
            self.removed_urls += 1
        if _ITEMS_ONLY.fullmatch(text.strip()):
            return f"[{text.strip()}]"  # a marker the model made a link of
        return text if text.strip() else _GAP

    def reference_definition(self, match: re.Match[str]) -> str:
        self.removed_urls += 1
        self._labels.add(match.group("label").strip().lower())
        return _GAP

    def reference_link(self, match: re.Match[str]) -> str:
        if match.group("label").strip().lower() not in self._labels:
            return match.group(0)
        return match.group("text")

    def whole_url(self, match: re.Match[str]) -> str:
        self.removed_urls += 1
        return _GAP

    def url(self, match: re.Match[str]) -> str:
        _, trailing = _split_trailing(match.group(0))
        self.removed_urls += 1
        return _GAP + trailing

    def bare_url(self, match: re.Match[str]) -> str:
        rest, tld = match.group("rest"), match.group("tld")
        if not rest.startswith("/") and tld not in _COMMON_TLDS:
            return match.group(0)
        return self.url(match)

    def markers(self, match: re.Match[str]) -> str:
        cited: list[int] = []
        for item in _CITED.finditer(match.group(0)):
            ref = self._refs.get(int(item.group("number"))) if item.group("k") else None
            if ref is None:
                self.dropped_markers += 1
                continue
            source = self._number_of(ref)
            if source not in cited:
                cited.append(source)
        return "".join(source_marker(n) for n in cited) if cited else _GAP

    def _number_of(self, ref: KnowledgeRef) -> int:
        number = self._numbers.get(ref.document_id)
        if number is None:
            number = len(self.sources) + 1
            self._numbers[ref.document_id] = number
            self.sources.append(CitedSource(number, ref.document_id, ref.title, ref.url))
        return number


def resolve_citations(reply_text: str, refs: Sequence[KnowledgeRef]) -> CitedReply:
    """The reply with its knowledge markers renumbered in the order of first citation, the
    markers citing no number of `refs` and every URL taken out, and the documents cited."""
    resolver = _Resolver(refs)
    text = reply_text.replace(_GAP, "")
    text = _REFERENCE_DEFINITION.sub(resolver.reference_definition, text)
    text = _REFERENCE_LINK.sub(resolver.reference_link, text)
    text = _MARKDOWN_LINK.sub(resolver.markdown_link, text)
    text = _AUTOLINK.sub(resolver.whole_url, text)
    text = _URL.sub(resolver.url, text)
    text = _BARE_URL.sub(resolver.bare_url, text)
    text = _RUN.sub(resolver.markers, text)
    if _GAP in text:
        text = _closed_gaps(text)
    return CitedReply(
        text=text,
        sources=tuple(resolver.sources),
        dropped_markers=resolver.dropped_markers,
        removed_urls=resolver.removed_urls,
    )


def cited_while_written(text: str, refs: Sequence[KnowledgeRef]) -> str:
    """A reply being streamed as the customer may see it: what may still be a marker or a URL
    at its end held back, the rest resolved. The numbers shown stay as the reply grows: they
    follow the order of first citation."""
    written = text
    while tail := _UNFINISHED_TAIL.search(written):
        if tail.start() == len(written):
            break
        # The last word may close a bracket opened before it: cut again, up to that bracket.
        written = written[: tail.start()]
    return resolve_citations(written, refs).text


def _closed_gaps(text: str) -> str:
    """`text` with the places something was taken out closed up: a gap between words leaves
    one space, at a line's start or end or before punctuation none; brackets or emphasis left
    empty go too, and a line left empty or with a bullet alone."""
    text = _EMPTY_BRACKETS.sub(_GAP, text)
    text = _EMPHASIS_AROUND.sub(_GAP, text)

    def close(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        at_line_start = start == 0 or text[start - 1] == "\n"
        after = text[end : end + 1]
        if at_line_start or after in ("", "\n") or after in _CLOSES_BEFORE:
            return ""
        return " " if match.group("lead") or match.group("trail") else ""

    lines = _GAP_RUN.sub(close, text).split("\n")
    changed = {i for i, line in enumerate(text.split("\n")) if _GAP in line}
    kept = [
        line for i, line in enumerate(lines) if i not in changed or not _BULLET_ALONE.match(line)
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
