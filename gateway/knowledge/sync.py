"""Knowledge documents that live at a URL: added by fetching it, read again when it changes.

Every fetch goes through the safe fetcher (`SafeFetcher`, kind `DOCUMENT`). A page's format
comes from its Content-Type (else its URL's extension), its title from the page itself, and
it is stored through the same write path as an upload (`add_document`: audited, a replaced
document forgotten by every process). A re-sync sends the validators the last fetch kept
(If-None-Match, If-Modified-Since): a 304 only moves the document's sync time; new bytes
replace its chunks; a failure (refused, unreachable, unreadable) is noted on the document and
its chunks stay as they were.

A sitemap (`urlset`, or a `sitemapindex` one level deep) adds or re-syncs each page it lists
on the sitemap's own host (the protocol's rule), at most `MAX_SITEMAP_PAGES` of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Final, Literal
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context.tokens import TokenCounter
from gateway.knowledge.documents import (
    Announce,
    DocumentTooLarge,
    Upload,
    UrlTaken,
    add_document,
)
from gateway.knowledge.parsing import DocumentUnreadable, format_of
from gateway.knowledge.sitemaps import SitemapUnreadable, looks_like_sitemap, read_sitemap
from gateway.storage.models_knowledge import URL_LENGTH
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import DocumentRecord
from identity.audience import Audience
from outbound import Fetched, FetchError, FetchKind, SafeFetcher

__all__ = [
    "MAX_SITEMAP_PAGES",
    "SYNC_ACTOR",
    "KnowledgeSync",
    "NotASitemap",
    "Synced",
    "UrlAdded",
]

# Who the scheduled re-sync is in the audit log.
SYNC_ACTOR: Final = "knowledge-sync"
# The most pages one sitemap adds: a help center's articles, not a whole site's archive.
MAX_SITEMAP_PAGES: Final = 500
# Pages of a sitemap fetched at once: a sitemap's pages are all on one host.
SITEMAP_CONCURRENCY: Final = 4

SyncOutcome = Literal["added", "replaced", "unchanged", "not_modified", "failed"]


class NotASitemap(ValueError):
    """A URL given as a sitemap answered with something else."""


@dataclass(frozen=True, slots=True)
class Synced:
    """What one URL's fetch did; `document` is None for a new URL that could not be read."""

    url: str
    outcome: SyncOutcome
    document: DocumentRecord | None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class UrlAdded:
    """A URL added: one page, or each page its sitemap lists; `skipped` counts the pages a
    sitemap listed past the cap or on another host, and its nested indexes."""

    url: str
    sitemap: bool
    pages: tuple[Synced, ...]
    skipped: int = 0


def valid_url(url: str) -> bool:
    """Whether ``url`` may name a document: http(s), no spaces, and short enough to store."""
    return url.startswith(("http://", "https://")) and " " not in url and len(url) <= URL_LENGTH


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None


def _file_name(url: str) -> str | None:
    """The last segment of the URL's path (its extension may name the format)."""
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    return name or None


@dataclass(frozen=True, slots=True)
class KnowledgeSync:
    """Adds and re-syncs a tenant's URL documents; `announce` tells every process to forget a
    replaced document, as uploads do."""

    sessions: async_sessionmaker[AsyncSession]
    fetcher: SafeFetcher
    announce: Announce
    counter: TokenCounter | None = None

    async def add_url(
        self, *, tenant: str, url: str, audience: Audience, actor: str, sitemap: bool = False
    ) -> UrlAdded:
        """Add the page at ``url`` (a page already stored is re-synced), or each page of the
        sitemap there. ``sitemap`` insists on one (`NotASitemap` otherwise)."""
        known: DocumentRecord | None = None
        if not sitemap:
            async with self.sessions() as session:
                known = await knowledge.document_by_url(session, tenant, url)
            if known is not None and known.audience == audience:
                return UrlAdded(url, False, (await self._resync(known, actor),))
        try:
            fetched = await self.fetcher.get(url, kind=FetchKind.DOCUMENT)
        except FetchError as exc:
            if sitemap:
                raise NotASitemap(f"the sitemap could not be fetched: {exc}") from exc
            return UrlAdded(url, False, (await self._failed(url, known, str(exc)),))
        if looks_like_sitemap(fetched.content_type, fetched.body):
            return await self._sitemap(tenant, url, fetched, audience, actor)
        if sitemap:
            raise NotASitemap(f"{url} is not a sitemap (its answer is {fetched.content_type})")
        page = await self._store(tenant, url, fetched, audience, actor, known)
        return UrlAdded(url, False, (page,))

    async def _add_page(self, *, tenant: str, url: str, audience: Audience, actor: str) -> Synced:
        """One page a sitemap lists: re-synced when stored with the same audience, else
        fetched and stored (never read as a sitemap in turn)."""
        async with self.sessions() as session:
            known = await knowledge.document_by_url(session, tenant, url)
        if known is not None and known.audience == audience:
            return await self._resync(known, actor)
        try:
            fetched = await self.fetcher.get(url, kind=FetchKind.DOCUMENT)
        except FetchError as exc:
            return await self._failed(url, known, str(exc))
        return await self._store(tenant, url, fetched, audience, actor, known)

    async def sync_document(self, *, tenant: str, document_id: str, actor: str) -> Synced | None:
        """Read the tenant's URL document again; None when it has no such document. A
        document without a URL is `LookupError` (there is nothing to fetch)."""
        async with self.sessions() as session:
            found = await knowledge.get_document(session, tenant, document_id)
        if found is None:
            return None
        if found.source_url is None:
            raise LookupError("the document was uploaded, not fetched from a URL")
        return await self._resync(found, actor)

    async def sync_documents(
        self, documents: Sequence[DocumentRecord], *, actor: str = SYNC_ACTOR
    ) -> list[Synced]:
        """Re-sync these URL documents in turn (the schedule's pass)."""
        return [await self._resync(found, actor) for found in documents if found.source_url]

    async def _resync(self, found: DocumentRecord, actor: str) -> Synced:
        url = found.source_url or ""
        try:
            fetched = await self.fetcher.get(
                url,
                kind=FetchKind.DOCUMENT,
                if_none_match=found.etag,
                if_modified_since=found.last_modified,
            )
        except FetchError as exc:
            return await self._failed(url, found, str(exc))
        if fetched.not_modified:
            async with self.sessions.begin() as session:
                await knowledge.record_not_modified(
                    session,
                    found.tenant,
                    found.id,
                    etag=fetched.etag,
                    last_modified=_http_date(fetched.last_modified),
                )
                current = await knowledge.get_document(session, found.tenant, found.id)
            return Synced(url, "not_modified", current or found)
        return await self._store(found.tenant, url, fetched, found.audience, actor, found)

    async def _store(
        self,
        tenant: str,
        url: str,
        fetched: Fetched,
        audience: Audience,
        actor: str,
        known: DocumentRecord | None,
    ) -> Synced:
        fmt = format_of(fetched.content_type, _file_name(fetched.final_url))
        if fmt is None:
            reason = f"the page's type ({fetched.content_type or 'none'}) is not a document's"
            return await self._failed(url, known, reason)
        last_modified = _http_date(fetched.last_modified)
        upload = Upload(
            body=fetched.body,
            format=fmt,
            audience=audience,
            source_url=url,
            updated_at=last_modified,
            name=url,
            etag=fetched.etag,
            last_modified=last_modified,
        )
        try:
            stored = await add_document(
                self.sessions,
                upload,
                tenant=tenant,
                actor=actor,
                announce=self.announce,
                counter=self.counter,
            )
        except (DocumentTooLarge, DocumentUnreadable, UrlTaken) as exc:
            # UrlTaken: the same URL was added at the same moment by another call.
            return await self._failed(url, known, str(exc))
        return Synced(url, stored.outcome, stored.document)

    async def _failed(self, url: str, known: DocumentRecord | None, reason: str) -> Synced:
        """Note the failure on the stored document (its chunks stay)."""
        if known is None:
            return Synced(url, "failed", None, reason)
        async with self.sessions.begin() as session:
            await knowledge.record_sync_error(session, known.tenant, known.id, reason)
            current = await knowledge.get_document(session, known.tenant, known.id)
        return Synced(url, "failed", current or known, reason)

    async def _sitemap(
        self, tenant: str, url: str, fetched: Fetched, audience: Audience, actor: str
    ) -> UrlAdded:
        pages, skipped = await self._pages_of(url, fetched)
        if len(pages) > MAX_SITEMAP_PAGES:
            skipped += len(pages) - MAX_SITEMAP_PAGES
            pages = pages[:MAX_SITEMAP_PAGES]
        gate = asyncio.Semaphore(SITEMAP_CONCURRENCY)

        async def one(page: str) -> Synced:
            async with gate:
                return await self._add_page(tenant=tenant, url=page, audience=audience, actor=actor)

        synced = await asyncio.gather(*(one(page) for page in pages))
        return UrlAdded(url, True, tuple(synced), skipped)

    async def _pages_of(self, url: str, fetched: Fetched) -> tuple[list[str], int]:
        """The page URLs a sitemap lists on its host (an index's sitemaps read one level
        deep), and how many it listed that are not taken."""
        try:
            listed = read_sitemap(fetched.body)
        except SitemapUnreadable as exc:
            raise NotASitemap(str(exc)) from exc
        host = urlsplit(url).netloc.lower()
        skipped = 0
        if listed.kind == "urlset":
            candidates = list(listed.urls)
        else:
            candidates = []
            for child in listed.urls:
                if urlsplit(child).netloc.lower() != host or len(candidates) > MAX_SITEMAP_PAGES:
                    skipped += 1
                    continue
                child_pages = await self._child_pages(child)
                if child_pages is None:
                    skipped += 1
                    continue
                candidates.extend(child_pages)
        pages: dict[str, None] = {}
        for page in candidates:
            if urlsplit(page).netloc.lower() == host and valid_url(page):
                pages[page] = None
            else:
                skipped += 1
        return list(pages), skipped

    async def _child_pages(self, url: str) -> tuple[str, ...] | None:
        """The pages a sitemap of an index lists; None when it cannot be read or is itself an
        index (indexes are read one level deep)."""
        try:
            fetched = await self.fetcher.get(url, kind=FetchKind.DOCUMENT)
            child = read_sitemap(fetched.body)
        except (FetchError, SitemapUnreadable):
            return None
        return child.urls if child.kind == "urlset" else None
