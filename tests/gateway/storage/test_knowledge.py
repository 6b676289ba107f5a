"""The knowledge base's storage: a document stored with its chunks, replaced whole when it
changes and left alone when it does not, listed with its chunk count and sync, deleted with
its chunks, and read for a window only by the audiences that may see it, tenant by tenant."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.knowledge.records import Chunk, ParsedDocument
from gateway.storage.models_knowledge import KnowledgeChunk
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.knowledge import NewDocument
from identity.audience import Audience, audiences_for
from identity.levels import LinkLevel

DAY = datetime(2026, 11, 30, tzinfo=UTC)
NOW = datetime(2026, 12, 5, 4, tzinfo=UTC)
URL = "https://shop.example.com/help/returns"


def _parsed(title: str, *texts: str) -> ParsedDocument:
    return ParsedDocument(
        title, tuple(Chunk(i, (title, f"part {i}"), text) for i, text in enumerate(texts))
    )


def _new(
    parsed: ParsedDocument,
    *,
    content_hash: str = "h1",
    audience: Audience = Audience.PUBLIC,
    tenant: str = "default",
    url: str | None = URL,
    updated_at: datetime = DAY,
) -> NewDocument:
    return NewDocument(
        tenant=tenant,
        parsed=parsed,
        format="markdown",
        audience=audience,
        content_hash=content_hash,
        updated_at=updated_at,
        source_url=url,
        etag='"v1"',
    )


async def _chunk_ids(session: AsyncSession, document_id: str) -> list[int]:
    rows = await session.scalars(
        select(KnowledgeChunk.id)
        .where(KnowledgeChunk.document_id == document_id)
        .order_by(KnowledgeChunk.position)
    )
    return list(rows)


async def test_a_document_is_stored_with_its_chunks_in_order(session: AsyncSession) -> None:
    parsed = _parsed("Returns", "Thirty days.", "Keep the receipt.")
    stored = await knowledge.store_document(
        session,
        NewDocument(
            tenant="default",
            parsed=parsed,
            format="markdown",
            audience=Audience.CUSTOMERS,
            content_hash="h1",
            updated_at=DAY,
            token_counts=(3, 4),
        ),
        now=NOW,
    )
    assert stored.outcome == "added"
    assert stored.document.chunk_count == 2
    assert stored.document.synced_at == NOW and stored.document.source_url is None

    chunks = await knowledge.document_chunks(session, stored.document)
    assert [(c.position, c.headings, c.text, c.token_count) for c in chunks] == [
        (0, ("Returns", "part 0"), "Thirty days.", 3),
        (1, ("Returns", "part 1"), "Keep the receipt.", 4),
    ]
    assert {c.audience for c in chunks} == {Audience.CUSTOMERS}
    assert {c.title for c in chunks} == {"Returns"}


async def test_a_changed_document_replaces_all_its_chunks_at_once(session: AsyncSession) -> None:
    first = await knowledge.store_document(
        session, _new(_parsed("Returns", "Thirty days.", "Keep the receipt.", "Refunds.")), now=NOW
    )

    later = NOW + timedelta(hours=1)
    second = await knowledge.store_document(
        session,
        _new(_parsed("Returns", "Sixty days now."), content_hash="h2"),
        now=later,
    )
    assert second.outcome == "replaced"
    assert second.document.id == first.document.id
    assert second.document.chunk_count == 1 and second.document.synced_at == later

    chunks = await knowledge.document_chunks(session, second.document)
    assert [c.text for c in chunks] == ["Sixty days now."]
    assert len(await _chunk_ids(session, first.document.id)) == 1


async def test_the_same_bytes_again_rewrite_nothing_but_the_sync(session: AsyncSession) -> None:
    first = await knowledge.store_document(
        session, _new(_parsed("Returns", "Thirty days.", "Keep the receipt.")), now=NOW
    )
    await knowledge.record_sync_error(session, "default", first.document.id, "HTTP 503")
    ids = await _chunk_ids(session, first.document.id)

    later = NOW + timedelta(days=1)
    again = await knowledge.store_document(
        session, _new(_parsed("Returns", "Thirty days.", "Keep the receipt.")), now=later
    )
    assert again.outcome == "unchanged"
    assert again.document.synced_at == later and again.document.sync_error is None
    assert again.document.created_at == first.document.created_at
    assert await _chunk_ids(session, first.document.id) == ids

    # Another audience is a change: the chunks carry it, so they are written again.
    relabelled = await knowledge.store_document(
        session,
        _new(_parsed("Returns", "Thirty days.", "Keep the receipt."), audience=Audience.VERIFIED),
        now=later,
    )
    assert relabelled.outcome == "replaced"
    chunks = await knowledge.document_chunks(session, relabelled.document)
    assert {c.audience for c in chunks} == {Audience.VERIFIED}


async def test_replacing_by_id_stays_in_the_tenant(session: AsyncSession) -> None:
    first = await knowledge.store_document(session, _new(_parsed("Hours", "9 to 5."), url=None))
    replaced = await knowledge.store_document(
        session,
        _new(_parsed("Hours", "9 to 6."), url=None, content_hash="h2"),
        document_id=first.document.id,
    )
    assert replaced.outcome == "replaced" and replaced.document.id == first.document.id
    with pytest.raises(LookupError):
        await knowledge.store_document(
            session,
            _new(_parsed("Hours", "x"), url=None, tenant="default/other.example.com"),
            document_id=first.document.id,
        )
    # Two uploads with no URL are two documents.
    other = await knowledge.store_document(session, _new(_parsed("Hours", "9 to 5."), url=None))
    assert other.outcome == "added" and other.document.id != first.document.id


async def test_one_document_per_url_and_tenant(session: AsyncSession) -> None:
    await knowledge.store_document(session, _new(_parsed("Returns", "a")))
    # The same URL for another tenant is another document.
    elsewhere = await knowledge.store_document(
        session, _new(_parsed("Returns", "a"), tenant="default/other.example.com")
    )
    assert elsewhere.outcome == "added"
    found = await knowledge.document_by_url(session, "default", URL)
    assert found is not None and found.etag == '"v1"'
    # Another document moved to a URL the tenant already has is refused by the database.
    upload = await knowledge.store_document(session, _new(_parsed("Hours", "x"), url=None))
    with pytest.raises(IntegrityError):
        async with session.begin_nested():
            await knowledge.store_document(
                session,
                _new(_parsed("Hours", "x"), content_hash="h9"),
                document_id=upload.document.id,
            )


async def test_listed_with_chunk_counts_sync_and_errors(session: AsyncSession) -> None:
    old = await knowledge.store_document(
        session, _new(_parsed("Returns", "a", "b", "c")), now=NOW - timedelta(days=2)
    )
    new = await knowledge.store_document(
        session, _new(_parsed("Hours", "9 to 5."), url=None), now=NOW
    )
    empty = await knowledge.store_document(
        session,
        _new(_parsed("Blank"), url="https://shop.example.com/blank", content_hash="h3"),
        now=NOW - timedelta(days=1),
    )
    assert await knowledge.record_sync_error(session, "default", old.document.id, "HTTP 404")
    assert not await knowledge.record_sync_error(session, "default", "nosuchdocument", "x")
    await knowledge.store_document(
        session, _new(_parsed("Elsewhere", "x"), tenant="default/other.example.com")
    )

    listed = await knowledge.list_documents(session, "default")
    assert [(d.id, d.chunk_count) for d in listed] == [
        (new.document.id, 1),
        (empty.document.id, 0),
        (old.document.id, 3),
    ]
    assert listed[2].sync_error == "HTTP 404"
    assert listed[2].synced_at == NOW - timedelta(days=2)


async def test_deleted_with_its_chunks(session: AsyncSession) -> None:
    stored = await knowledge.store_document(session, _new(_parsed("Returns", "a", "b")))
    other = await knowledge.store_document(session, _new(_parsed("Hours", "c"), url=None))
    assert await knowledge.delete_document(session, "default/other", stored.document.id) is None

    gone = await knowledge.delete_document(session, "default", stored.document.id)
    assert gone is not None and gone.id == stored.document.id and gone.chunk_count == 2
    assert await knowledge.get_document(session, "default", stored.document.id) is None
    remaining = await session.scalar(select(func.count()).select_from(KnowledgeChunk))
    assert remaining == 1
    assert await knowledge.delete_document(session, "default", stored.document.id) is None
    assert await knowledge.get_document(session, "default", other.document.id) is not None


async def test_a_window_reads_only_what_its_audiences_may_see(session: AsyncSession) -> None:
    for audience, day in (
        (Audience.PUBLIC, 1),
        (Audience.CUSTOMERS, 2),
        (Audience.VERIFIED, 3),
        (Audience.OPERATORS, 4),
    ):
        await knowledge.store_document(
            session,
            _new(
                _parsed(audience.value, f"{audience.value} 1", f"{audience.value} 2"),
                audience=audience,
                url=f"https://shop.example.com/{audience.value}",
                updated_at=DAY + timedelta(days=day),
            ),
        )
    await knowledge.store_document(
        session, _new(_parsed("elsewhere", "x"), tenant="default/other.example.com")
    )

    def texts(chunks: list[knowledge.StoredChunk]) -> list[str]:
        return [c.text for c in chunks]

    anonymous = await knowledge.visible_chunks(
        session, "default", audiences_for(LinkLevel.ANONYMOUS), limit=50
    )
    assert texts(anonymous) == ["public 1", "public 2"]
    assert anonymous[0].source_url == "https://shop.example.com/public"
    assert anonymous[0].updated_at == DAY + timedelta(days=1)

    verified = await knowledge.visible_chunks(
        session, "default", audiences_for(LinkLevel.VERIFIED), limit=50
    )
    # The newest documents first, each document's chunks in order; never the operators'.
    assert texts(verified) == [
        "verified 1",
        "verified 2",
        "customers 1",
        "customers 2",
        "public 1",
        "public 2",
    ]
    bounded = await knowledge.visible_chunks(
        session, "default", audiences_for(LinkLevel.VERIFIED), limit=3
    )
    assert texts(bounded) == ["verified 1", "verified 2", "customers 1"]
    assert await knowledge.visible_chunks(session, "default", frozenset(), limit=50) == []
    operators = await knowledge.visible_chunks(session, "default", {Audience.OPERATORS}, limit=50)
    assert texts(operators) == ["operators 1", "operators 2"]


def test_token_counts_need_one_per_chunk() -> None:
    with pytest.raises(ValueError, match="one count per chunk"):
        NewDocument(
            tenant="default",
            parsed=_parsed("Returns", "a", "b"),
            format="text",
            audience=Audience.PUBLIC,
            content_hash="h",
            updated_at=DAY,
            token_counts=(1,),
        )


async def test_a_date_moves_only_when_given_and_a_url_stays_with_its_document(
    session: AsyncSession,
) -> None:
    undated = NewDocument(
        tenant="default",
        parsed=_parsed("Returns", "Thirty days."),
        format="markdown",
        audience=Audience.PUBLIC,
        content_hash="h1",
        source_url=URL,
    )
    first = await knowledge.store_document(session, undated, now=NOW)
    assert first.document.updated_at == NOW
    # The same bytes later, with no date: the document's date stays its content's.
    again = await knowledge.store_document(session, undated, now=NOW + timedelta(days=3))
    assert again.outcome == "unchanged" and again.document.updated_at == NOW
    dated = await knowledge.store_document(
        session, _new(_parsed("Returns", "Thirty days."), updated_at=DAY), now=NOW
    )
    assert dated.outcome == "unchanged" and dated.document.updated_at == DAY

    # Replaced by id with no URL: still the document of its URL.
    replaced = await knowledge.store_document(
        session,
        _new(_parsed("Returns", "Sixty days."), url=None, content_hash="h2"),
        document_id=first.document.id,
    )
    assert replaced.outcome == "replaced" and replaced.document.source_url == URL


async def test_a_long_title_is_cut(session: AsyncSession) -> None:
    long_title = "T" * 700
    stored = await knowledge.store_document(session, _new(_parsed(long_title, "body")))
    assert stored.document.title == "T" * 500
    again = await knowledge.store_document(session, _new(_parsed(long_title, "body")))
    assert again.outcome == "unchanged"


async def test_a_source_not_modified_moves_the_sync_only(session: AsyncSession) -> None:
    stored = await knowledge.store_document(session, _new(_parsed("Returns", "a", "b")), now=NOW)
    await knowledge.record_sync_error(session, "default", stored.document.id, "timeout")
    later = NOW + timedelta(hours=6)
    assert await knowledge.record_not_modified(
        session, "default", stored.document.id, now=later, etag='"v2"'
    )
    assert not await knowledge.record_not_modified(
        session, "default/other.example.com", stored.document.id, now=later
    )
    session.expire_all()
    found = await knowledge.get_document(session, "default", stored.document.id)
    assert found is not None
    assert (found.synced_at, found.sync_error, found.etag) == (later, None, '"v2"')
    assert found.updated_at == DAY and found.chunk_count == 2
