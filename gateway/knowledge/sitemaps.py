"""A sitemap's bytes read into the URLs it lists (pure: no I/O, nothing fetched).

Sitemaps are XML (sitemaps.org 0.9): a `urlset` lists pages, a `sitemapindex` lists further
sitemaps. The bytes are read by expat, the parser under `xml.etree`, called directly because
`xml.etree` gives no way to refuse a DTD: a document type declaration or an entity declaration
refuses the whole sitemap (nothing a sitemap needs, and how entity expansion attacks start).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal
from xml.parsers import expat

__all__ = ["Sitemap", "SitemapUnreadable", "looks_like_sitemap", "read_sitemap"]

SitemapKind = Literal["urlset", "sitemapindex"]
# What a `<loc>` sits in, under each kind of sitemap's root.
_ENTRY: Final[dict[str, str]] = {"urlset": "url", "sitemapindex": "sitemap"}
# The most URLs one sitemap is read for; the protocol allows 50,000 a file.
MAX_LISTED: Final = 50_000


class SitemapUnreadable(ValueError):
    """The body is not a sitemap, or declares a DTD or entities; the message says which."""


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What a sitemap lists: pages (`urlset`) or further sitemaps (`sitemapindex`), in order,
    each once."""

    kind: SitemapKind
    urls: tuple[str, ...]


def looks_like_sitemap(content_type: str | None, body: bytes) -> bool:
    """Whether a fetched body is XML whose root is a sitemap's (told before parsing it whole:
    an HTML page is not taken for one)."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type in ("text/html", "application/xhtml+xml", "application/pdf"):
        return False
    head = body[:2048].lstrip().lower()
    return b"<urlset" in head or b"<sitemapindex" in head


def _local(name: str) -> str:
    """An element's name without its namespace (expat joins them with a space)."""
    return name.rsplit(" ", 1)[-1]


def read_sitemap(body: bytes) -> Sitemap:
    """The URLs ``body`` lists; raises `SitemapUnreadable` for a body that is not a sitemap's
    XML or that declares a DTD or an entity."""
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    path: list[str] = []
    text: list[str] = []
    urls: dict[str, None] = {}  # in order, each once
    root: list[str] = []

    def refuse(*_: object) -> None:
        raise SitemapUnreadable("the sitemap declares a DTD or entities, which are refused")

    def start(name: str, _attributes: dict[str, str]) -> None:
        local = _local(name)
        if not root:
            root.append(local)
        path.append(local)
        if local == "loc":
            text.clear()

    def end(_name: str) -> None:
        if (
            len(path) == 3
            and path[2] == "loc"
            and path[1] == _ENTRY.get(path[0])
            and len(urls) < MAX_LISTED
        ):
            url = "".join(text).strip()
            if url:
                urls[url] = None
        path.pop()

    def characters(data: str) -> None:
        if path and path[-1] == "loc":
            text.append(data)

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = characters
    try:
        parser.Parse(body, True)
    except expat.ExpatError as exc:
        raise SitemapUnreadable(f"the sitemap is not well-formed XML: {exc}") from exc
    return Sitemap(_kind(root[0] if root else ""), tuple(urls))


def _kind(root: str) -> SitemapKind:
    if root == "urlset":
        return "urlset"
    if root == "sitemapindex":
        return "sitemapindex"
    raise SitemapUnreadable(f"not a sitemap: its root is <{root or 'nothing'}>")
