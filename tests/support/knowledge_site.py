"""A help center served on loopback for the knowledge base's URL documents: pages with an ETag
and a Last-Modified that answer 304 to a request carrying a matching validator, a sitemap, a
sitemap index, and a page that fails. Every request's path and validators are kept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

from aiohttp import web

from devtools.loopback import serving_on_loopback

RETURNS_MD = (
    "# Returns\n\nThirty days with the receipt.\n\n## Refunds\n\nTo the card you paid with.\n"
)
HOURS_HTML = (
    "<html><head><title>Opening hours</title></head><body><nav>Home</nav>"
    "<h1>Opening hours</h1><p>Monday to Friday, 9 to 18.</p></body></html>"
)
FIRST_MODIFIED = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@dataclass
class Page:
    body: bytes
    content_type: str
    etag: str
    modified: datetime


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the site saw it."""

    path: str
    if_none_match: str | None
    if_modified_since: str | None


@dataclass
class HelpCenter:
    """The pages by path; `change` gives one new bytes, a new ETag and a later date."""

    root: str = ""
    pages: dict[str, Page] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)

    def url(self, path: str) -> str:
        return f"{self.root}{path}"

    def put(self, path: str, body: str | bytes, content_type: str, etag: str) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self.pages[path] = Page(raw, content_type, etag, FIRST_MODIFIED)

    def change(self, path: str, body: str, etag: str) -> None:
        page = self.pages[path]
        self.pages[path] = Page(body.encode(), page.content_type, etag, datetime.now(UTC))

    def requests_for(self, path: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.path == path]

    def sitemap(self, path: str, page_paths: list[str]) -> None:
        entries = "".join(f"<url><loc>{self.url(p)}</loc></url>" for p in page_paths)
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        )
        self.put(path, body, "application/xml", f'"{path}-1"')

    def sitemap_index(self, path: str, sitemap_paths: list[str]) -> None:
        entries = "".join(f"<sitemap><loc>{self.url(p)}</loc></sitemap>" for p in sitemap_paths)
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{entries}</sitemapindex>"
        )
        self.put(path, body, "application/xml", f'"{path}-1"')

    async def serve(self, request: web.Request) -> web.Response:
        self.seen.append(
            Seen(
                request.path,
                request.headers.get("If-None-Match"),
                request.headers.get("If-Modified-Since"),
            )
        )
        if request.path in self.failing:
            return web.Response(status=500, text="down")
        page = self.pages.get(request.path)
        if page is None:
            return web.Response(status=404)
        validators = {"ETag": page.etag, "Last-Modified": format_datetime(page.modified, True)}
        if _current(request, page):
            return web.Response(status=304, headers=validators)
        return web.Response(body=page.body, content_type=page.content_type, headers=validators)


def _current(request: web.Request, page: Page) -> bool:
    """Whether the request's validators match the page (an ETag wins over a date)."""
    match = request.headers.get("If-None-Match")
    if match is not None:
        return match == page.etag
    since = request.headers.get("If-Modified-Since")
    if since is None:
        return False
    return page.modified <= parsedate_to_datetime(since)


@asynccontextmanager
async def help_center() -> AsyncIterator[HelpCenter]:
    """The site on a free loopback port, with a Markdown page and an HTML page."""
    site = HelpCenter()
    app = web.Application()
    app.router.add_get("/{path:.*}", site.serve)
    async with serving_on_loopback(app) as root:
        site.root = root
        site.put("/help/returns.md", RETURNS_MD, "text/markdown", '"returns-1"')
        site.put("/help/hours.html", HOURS_HTML, "text/html", '"hours-1"')
        yield site
