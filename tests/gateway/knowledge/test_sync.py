"""URL documents against a help center served on loopback, on SQLite and PostgreSQL: a page
added with its validators, a re-sync that sends them and gets a 304, a changed page that
replaces the chunks (and is forgotten everywhere), failures noted with the old chunks kept, a
sitemap and a sitemap index adding each page, and the schedule reading only stale documents."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.knowledge.forgetting import DocumentsForgotten
from gateway.knowledge.resync import BackgroundResync
from gateway.knowledge.sync import KnowledgeSync, NotASitemap
from gateway.runtime.clock import utcnow
from gateway.storage.models import AuditEntry
from gateway.storage.models_knowledge import KnowledgeChunk, KnowledgeDocument
from gateway.storage.repositories import knowledge
from identity.audience import Audience
from outbound import FetchPolicy, SafeFetcher
from tests.support.knowledge_site import FIRST_MODIFIED, HelpCenter, help_center

RETURNS = "/help/returns.md"
HOURS = "/help/hours.html"


@pytest.fixture
async def site() -> AsyncIterator[HelpCenter]:
    async with help_center() as served:
        yield served


@pytest.fixture
async def tenant(sessions: async_sessionmaker[AsyncSession]) -> AsyncIterator[str]:
    """A tenant of the test's own; the sessions commit, so what it stored is deleted after
    (storage tests on the same database count every chunk)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    yield name
    async with sessions.begin() as session:
        ids = select(KnowledgeDocument.id).where(KnowledgeDocument.tenant == name)
        await session.execute(
            delete(AuditEntry).where(
                AuditEntry.subject_type == "knowledge_document", AuditEntry.subject_id.in_(ids)
            )
        )
        await session.execute(delete(KnowledgeChunk).where(KnowledgeChunk.tenant == name))
        await session.execute(delete(KnowledgeDocument).where(KnowledgeDocument.tenant == name))


class Announced:
    def __init__(self) -> None:
        self.forgotten: list[DocumentsForgotten] = []

    async def __call__(self, forgotten: DocumentsForgotten) -> None:
        self.forgotten.append(forgotten)


@pytest.fixture
async def syncing(
    sessions: async_sessionmaker[AsyncSession],
) -> AsyncIterator[tuple[KnowledgeSync, Announced]]:
    announced = Announced()
    # Loopback is refused unless listed, as a deployment lists what it runs itself.
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        yield KnowledgeSync(sessions, fetcher, announced), announced
    finally:
        await fetcher.aclose()


async def _texts(sessions: async_sessionmaker[AsyncSession], tenant: str, url: str) -> list[str]:
    async with sessions() as session:
        found = await knowledge.document_by_url(session, tenant, url)
        assert found is not None
        return [chunk.text for chunk in await knowledge.document_chunks(session, found)]


async def test_a_page_is_added_then_found_current_by_its_etag(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, announced = syncing
    url = site.url(RETURNS)
    added = await sync.add_url(tenant=tenant, url=url, audience=Audience.PUBLIC, actor="ana")
    [page] = added.pages
    assert (added.sitemap, page.outcome) == (False, "added")
    assert page.document is not None
    first = page.document
    assert (first.title, first.format, first.etag) == ("Returns", "markdown", '"returns-1"')
    assert first.last_modified == FIRST_MODIFIED and first.updated_at == FIRST_MODIFIED
    assert await _texts(sessions, tenant, url) == [
        "Thirty days with the receipt.",
        "To the card you paid with.",
    ]

    again = await sync.sync_document(tenant=tenant, document_id=first.id, actor="ana")
    assert again is not None and again.outcome == "not_modified"
    assert again.document is not None and again.document.synced_at > first.synced_at
    last = site.requests_for(RETURNS)[-1]
    assert last.if_none_match == '"returns-1"'
    assert last.if_modified_since == "Mon, 02 Nov 2026 09:00:00 GMT"
    assert announced.forgotten == []  # nothing replaced
    assert len(await _texts(sessions, tenant, url)) == 2


async def test_a_changed_page_replaces_its_chunks_and_is_forgotten(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, announced = syncing
    url = site.url(RETURNS)
    added = await sync.add_url(tenant=tenant, url=url, audience=Audience.CUSTOMERS, actor="ana")
    document = added.pages[0].document
    assert document is not None

    site.change(RETURNS, "# Returns\n\nSixty days now.\n", '"returns-2"')
    synced = await sync.sync_document(tenant=tenant, document_id=document.id, actor="ana")
    assert synced is not None and synced.outcome == "replaced"
    assert synced.document is not None and synced.document.etag == '"returns-2"'
    assert synced.document.audience is Audience.CUSTOMERS
    assert await _texts(sessions, tenant, url) == ["Sixty days now."]
    assert announced.forgotten == [DocumentsForgotten(tenant, (document.id,))]


async def test_a_failed_fetch_is_noted_and_the_old_chunks_stay(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, _ = syncing
    url = site.url(HOURS)
    added = await sync.add_url(tenant=tenant, url=url, audience=Audience.PUBLIC, actor="ana")
    document = added.pages[0].document
    assert document is not None and document.title == "Opening hours"

    site.failing.add(HOURS)
    failed = await sync.sync_document(tenant=tenant, document_id=document.id, actor="ana")
    assert failed is not None and failed.outcome == "failed"
    assert failed.document is not None and failed.document.sync_error == failed.error
    assert "answered 500" in (failed.error or "")
    assert failed.document.synced_at == document.synced_at
    assert await _texts(sessions, tenant, url) == ["Monday to Friday, 9 to 18."]

    # Back up: the error is cleared.
    site.failing.clear()
    again = await sync.sync_document(tenant=tenant, document_id=document.id, actor="ana")
    assert again is not None and again.outcome == "not_modified"
    assert again.document is not None and again.document.sync_error is None


async def test_a_refused_address_is_noted_without_a_request(
    site: HelpCenter, sessions: async_sessionmaker[AsyncSession], tenant: str
) -> None:
    url = site.url(RETURNS)
    allowed = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    refusing = SafeFetcher(FetchPolicy())  # public addresses only
    try:
        added = await KnowledgeSync(sessions, allowed, Announced()).add_url(
            tenant=tenant, url=url, audience=Audience.PUBLIC, actor="ana"
        )
        document = added.pages[0].document
        assert document is not None
        requests = len(site.seen)
        strict = KnowledgeSync(sessions, refusing, Announced())
        failed = await strict.sync_document(tenant=tenant, document_id=document.id, actor="ana")
        new = await strict.add_url(
            tenant=tenant, url=site.url(HOURS), audience=Audience.PUBLIC, actor="ana"
        )
    finally:
        await allowed.aclose()
        await refusing.aclose()
    assert failed is not None and failed.outcome == "failed"
    assert "loopback" in (failed.error or "")
    assert failed.document is not None and failed.document.sync_error == failed.error
    assert [(p.outcome, p.document) for p in new.pages] == [("failed", None)]
    assert len(site.seen) == requests  # nothing reached the site
    assert len(await _texts(sessions, tenant, url)) == 2


async def test_a_sitemap_adds_each_page_it_lists_on_its_host(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, _ = syncing
    site.sitemap("/sitemap.xml", [RETURNS, HOURS, "/help/gone.md"])
    added = await sync.add_url(
        tenant=tenant, url=site.url("/sitemap.xml"), audience=Audience.PUBLIC, actor="ana"
    )
    assert added.sitemap
    outcomes = {page.url: page.outcome for page in added.pages}
    assert outcomes == {
        site.url(RETURNS): "added",
        site.url(HOURS): "added",
        site.url("/help/gone.md"): "failed",
    }
    async with sessions() as session:
        listed = await knowledge.list_documents(session, tenant)
    assert sorted(d.title for d in listed) == ["Opening hours", "Returns"]

    # Added again: the pages are re-synced by their validators.
    again = await sync.add_url(
        tenant=tenant, url=site.url("/sitemap.xml"), audience=Audience.PUBLIC, actor="ana"
    )
    assert sorted(p.outcome for p in again.pages) == ["failed", "not_modified", "not_modified"]


async def test_a_sitemap_index_is_read_one_level_deep(
    site: HelpCenter, syncing: tuple[KnowledgeSync, Announced], tenant: str
) -> None:
    sync, _ = syncing
    site.sitemap("/sitemap-help.xml", [RETURNS])
    site.sitemap_index("/sitemap-deeper.xml", ["/sitemap-help.xml"])
    site.sitemap_index("/sitemap-index.xml", ["/sitemap-help.xml", "/sitemap-deeper.xml"])
    site.put(
        "/other.xml",
        "<urlset><url><loc>https://elsewhere.example/a</loc></url></urlset>",
        "application/xml",
        '"o"',
    )
    added = await sync.add_url(
        tenant=tenant,
        url=site.url("/sitemap-index.xml"),
        audience=Audience.PUBLIC,
        actor="ana",
        sitemap=True,
    )
    assert [(p.url, p.outcome) for p in added.pages] == [(site.url(RETURNS), "added")]
    assert added.skipped == 1  # the nested index
    # The nested index was fetched, the sitemap it lists was not (read once, from the top).
    assert len(site.requests_for("/sitemap-deeper.xml")) == 1
    assert len(site.requests_for("/sitemap-help.xml")) == 1
    # A page on another host is not taken from a sitemap.
    elsewhere = await sync.add_url(
        tenant=tenant, url=site.url("/other.xml"), audience=Audience.PUBLIC, actor="ana"
    )
    assert (elsewhere.pages, elsewhere.skipped) == ((), 1)
    with pytest.raises(NotASitemap):
        await sync.add_url(
            tenant=tenant,
            url=site.url(RETURNS),
            audience=Audience.PUBLIC,
            actor="ana",
            sitemap=True,
        )


async def test_the_schedule_reads_only_stale_documents(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, _ = syncing
    stale_page = await sync.add_url(
        tenant=tenant, url=site.url(RETURNS), audience=Audience.PUBLIC, actor="ana"
    )
    fresh_page = await sync.add_url(
        tenant=tenant, url=site.url(HOURS), audience=Audience.PUBLIC, actor="ana"
    )
    stale, fresh = stale_page.pages[0].document, fresh_page.pages[0].document
    assert stale is not None and fresh is not None
    async with sessions.begin() as session:
        await session.execute(
            update(KnowledgeDocument)
            .where(KnowledgeDocument.id == stale.id)
            .values(synced_at=utcnow() - timedelta(hours=7))
        )
    before = {path: len(site.requests_for(path)) for path in (RETURNS, HOURS)}

    resync = BackgroundResync(sync, resync_s=6 * 3600)
    done = await resync.step()
    assert [(s.url, s.outcome) for s in done if s.document and s.document.tenant == tenant] == [
        (site.url(RETURNS), "not_modified")
    ]
    assert len(site.requests_for(RETURNS)) == before[RETURNS] + 1
    assert len(site.requests_for(HOURS)) == before[HOURS]
    # Fresh again: the next pass reads nothing of this tenant.
    assert not [s for s in await resync.step() if s.document and s.document.tenant == tenant]


async def test_a_document_failing_on_schedule_waits_a_resync_age(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, _ = syncing
    added = await sync.add_url(
        tenant=tenant, url=site.url(RETURNS), audience=Audience.PUBLIC, actor="ana"
    )
    document = added.pages[0].document
    assert document is not None
    async with sessions.begin() as session:
        await session.execute(
            update(KnowledgeDocument)
            .where(KnowledgeDocument.id == document.id)
            .values(synced_at=utcnow() - timedelta(hours=7))
        )
    site.failing.add(RETURNS)
    resync = BackgroundResync(sync, resync_s=6 * 3600)
    first = [s for s in await resync.step() if s.document and s.document.tenant == tenant]
    assert [s.outcome for s in first] == ["failed"]
    second = [s for s in await resync.step() if s.document and s.document.tenant == tenant]
    assert second == []  # not fetched again at every wake
    assert len(site.requests_for(RETURNS)) == 2  # the add and the one failed re-sync


async def test_the_started_loop_takes_the_lock_and_reads_stale_documents(
    site: HelpCenter,
    syncing: tuple[KnowledgeSync, Announced],
    sessions: async_sessionmaker[AsyncSession],
    tenant: str,
) -> None:
    sync, _ = syncing
    added = await sync.add_url(
        tenant=tenant, url=site.url(RETURNS), audience=Audience.PUBLIC, actor="ana"
    )
    document = added.pages[0].document
    assert document is not None
    async with sessions.begin() as session:
        await session.execute(
            update(KnowledgeDocument)
            .where(KnowledgeDocument.id == document.id)
            .values(synced_at=utcnow() - timedelta(hours=7))
        )
    resync = BackgroundResync(sync, resync_s=6 * 3600, first_run_after_s=0)
    resync.start()
    recent = utcnow() - timedelta(minutes=5)
    try:
        async with asyncio.timeout(20):
            while True:  # until the loop's write is seen
                async with sessions() as session:
                    found = await knowledge.get_document(session, tenant, document.id)
                if found is not None and found.synced_at > recent:
                    break
                await asyncio.sleep(0.05)
    finally:
        await resync.close()
    assert site.requests_for(RETURNS)[-1].if_none_match == '"returns-1"'
    assert len(site.requests_for(RETURNS)) == 2
