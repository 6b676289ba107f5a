"""A reply's resolved citations as each channel shows them (`context.citations`).

WhatsApp and Telegram show plain text: the reply keeps its `[1]`, `[2]` and ends with a sources
list, one line per document (`[1] Title — https://…`, the title alone for a document without a
URL) under a header in the customer's language. The web chat keeps the markers in the text and
gets the sources apart (`links`), for the widget to show in the reply's bubble. A phone call
speaks the reply: a link cannot be followed there, so the markers go and no list is added.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from context.citations import CitedReply, CitedSource, resolve_citations, source_marker

__all__ = [
    "CitationStyle",
    "SOURCES_HEADERS",
    "SOURCES_HEADER_UNKNOWN",
    "RenderedReply",
    "citation_style",
    "render_cited_reply",
    "source_line",
    "sources_list",
]

# By the languages of the built-in customer texts (`pt`, `en`, `es`); when the language cannot
# be told, Portuguese and English together, as the built-in handoff text does.
SOURCES_HEADERS: Final[Mapping[str, str]] = MappingProxyType(
    {"pt": "Fontes:", "en": "Sources:", "es": "Fuentes:"}
)
SOURCES_HEADER_UNKNOWN: Final = "Fontes / Sources:"

_SPACES: Final = re.compile(r"\s+")

# `listed`: the sources listed after the text; `apart`: given apart for the channel to show;
# `spoken`: neither markers nor links.
CitationStyle = Literal["listed", "apart", "spoken"]


@dataclass(frozen=True, slots=True)
class RenderedReply:
    """What a channel sends for a cited reply: its text, and the sources a channel that can
    show them apart from the text gets (the web chat; empty for the others)."""

    text: str
    links: tuple[CitedSource, ...] = ()


def source_line(source: CitedSource) -> str:
    """``[1] Title — https://…``, or ``[1] Title`` for a document without a URL."""
    title = _SPACES.sub(" ", source.title).strip()  # a title is one line
    label = title or source.url or ""
    parts = [source_marker(source.number), label]
    if source.url and title:
        parts += ["—", source.url]
    return " ".join(part for part in parts if part)


def sources_list(sources: tuple[CitedSource, ...], language: str | None) -> str:
    """The header and one line per source; empty without sources."""
    if not sources:
        return ""
    header = SOURCES_HEADERS.get(language or "", SOURCES_HEADER_UNKNOWN)
    return "\n".join([header, *(source_line(source) for source in sources)])


def citation_style(channel: str) -> CitationStyle:
    """How the channel named `channel` (`identity.channels`) shows citations: the web chat
    apart, a phone call not at all, any other (a text channel) as a list."""
    if channel == "webchat":
        return "apart"
    if channel == "phone":
        return "spoken"
    return "listed"


def render_cited_reply(
    cited: CitedReply, style: CitationStyle, language: str | None
) -> RenderedReply:
    """`cited` as a channel of `style` sends it, the sources header in `language` (`pt`, `en`,
    `es`, or None when it cannot be told)."""
    if style == "apart":
        return RenderedReply(cited.text, cited.sources)
    if style == "spoken":
        # The resolved markers are the only bracketed numbers left; citing nothing drops them.
        return RenderedReply(resolve_citations(cited.text, ()).text)
    listed = sources_list(cited.sources, language)
    if not listed:
        return RenderedReply(cited.text)
    if not cited.text:
        return RenderedReply(listed)
    return RenderedReply(f"{cited.text}\n\n{listed}")
