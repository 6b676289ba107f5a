"""A process's cache of knowledge chunks over real storage: each link level reads only the
audiences it may be told, an entry serves until stale, and a replaced or deleted document
leaves it at once — through `KnowledgeForgetting` even without Redis (one process); a tenant's
knowledge slice of 0 keeps its windows off the cache at any window size."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context.inputs import KnowledgeItem
from gateway.knowledge.cache import KnowledgeCache
from gateway.knowledge.documents import Upload, add_document, remove_document
from gateway.knowledge.forgetting import DocumentsForgotten, KnowledgeForgetting
from gateway.knowledge.records import Chunk, ParsedDocument
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import NewDocument
from gateway.tenant_ref import TenantRef
from gateway.tenants import SliceBudgets, TenantSettings
from gateway.turns.window import budget_for
from identity.audience import Audience
from identity.levels import LinkLevel

DAY = datetime(2026, 11, 2, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _new(audience: Audience, text: str, *, tenant: str = "default") -> NewDocument:
    parsed = ParsedDocument(f"{audience.value} guide", (Chunk(0, ("Refunds",), text),))
    return NewDocument(
        tenant=tenant,
        parsed=parsed,
        format="markdown",
        audience=audience,
        content_hash=f"h-{audience.value}-{text}",
        updated_at=DAY,
    )


def _texts(items: tuple[KnowledgeItem, ...]) -> set[str]:
    return {item.text for item in items}


async def test_each_level_reads_only_the_audiences_it_may_be_told(session: AsyncSession) -> None:
    for audience in Audience:
        await knowledge.store_document(session, _new(audience, f"{audience.value} text"))
    await knowledge.store_document(session, _new(Audience.PUBLIC, "elsewhere", tenant="other"))
    cache = KnowledgeCache()
    told = {
        level: _texts((await cache.index(session, "default", level)).items) for level in LinkLevel
    }
    assert told[LinkLevel.ANONYMOUS] == {"public text"}
    assert told[LinkLevel.INFERRED] == {"public text"}
    assert told[LinkLevel.ASSERTED] == {"public text", "customers text"}
    assert told[LinkLevel.VERIFIED] == {"public text", "customers text", "verified text"}
    items = (await cache.index(session, "default", LinkLevel.VERIFIED)).items
    item = next(i for i in items if i.text == "public text")
    assert item.title == "public guide" and item.updated_at == DAY.date()
    assert "refund" in item.terms  # its headings are matched too


async def test_an_entry_serves_until_stale_and_a_drop_forgets_it_at_once(
    session: AsyncSession,
) -> None:
    clock = Clock()
    cache = KnowledgeCache(stale_after=60, clock=clock)
    first = await knowledge.store_document(session, _new(Audience.PUBLIC, "first"))
    assert _texts((await cache.index(session, "default", LinkLevel.ANONYMOUS)).items) == {"first"}
    await knowledge.store_document(session, _new(Audience.PUBLIC, "second"))
    clock.now += 59
    assert _texts((await cache.index(session, "default", LinkLevel.ANONYMOUS)).items) == {"first"}
    clock.now += 2
    assert _texts((await cache.index(session, "default", LinkLevel.ANONYMOUS)).items) == {
        "first",
        "second",
    }
    # Read again with nothing changed, the index built stands.
    before = await cache.index(session, "default", LinkLevel.ANONYMOUS)
    clock.now += 61
    assert await cache.index(session, "default", LinkLevel.ANONYMOUS) is before
    await knowledge.delete_document(session, "default", first.document.id)
    cache.drop(DocumentsForgotten("default", (first.document.id,)))
    assert _texts((await cache.index(session, "default", LinkLevel.ANONYMOUS)).items) == {"second"}


async def test_a_document_removed_without_redis_leaves_this_process_cache(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    cache = KnowledgeCache()
    forgetting = KnowledgeForgetting(None)
    forgetting.on_forget(cache.drop)
    tenant = TenantRef(domain="default", host="cache-test.example.com")
    shop = cache.of(tenant)
    stored = await add_document(
        sessions,
        Upload(b"Refunds take five days.", "text", Audience.PUBLIC, title="Refunds"),
        tenant=tenant.encode(),
        actor="ana",
        announce=forgetting.announce,
    )
    try:
        async with sessions() as session:
            assert _texts((await shop.index(session, LinkLevel.ANONYMOUS)).items) == {
                "Refunds take five days."
            }
        await remove_document(
            sessions,
            tenant=tenant.encode(),
            document_id=stored.document.id,
            actor="ana",
            announce=forgetting.announce,
        )
        async with sessions() as session:
            assert (await shop.index(session, LinkLevel.ANONYMOUS)).items == ()
    finally:
        async with sessions.begin() as session:
            await knowledge.delete_document(session, tenant.encode(), stored.document.id)


def test_a_knowledge_slice_of_zero_stays_off_at_any_window_size() -> None:
    off = TenantSettings(slices=SliceBudgets(knowledge=0))
    assert budget_for(off).slice_budget("knowledge") == 0
    assert budget_for(off, 16384).slice_budget("knowledge") == 0
    assert budget_for(TenantSettings(), 16384).slice_budget("knowledge") == 1200
    assert budget_for(TenantSettings(slices=SliceBudgets(knowledge=900))).knowledge == 900
