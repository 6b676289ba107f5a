"""Revision 0025 adds the knowledge base: one document per tenant and URL (uploaded ones have
none), chunks that follow their document, and a downgrade that takes both away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 4, tzinfo=UTC)
DOCUMENT = (
    "INSERT INTO knowledge_documents (id, tenant, title, source_url, format, audience, "
    "content_hash, updated_at, synced_at, created_at) "
    "VALUES (:id, 'default', 'Returns', :url, 'markdown', 'public', 'h', :at, :at, :at)"
)
CHUNK = (
    "INSERT INTO knowledge_chunks (document_id, tenant, audience, position, headings, text) "
    "VALUES ('d1', 'default', 'public', 0, '[\"Returns\"]', '30 days')"
)


async def _tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names)


async def test_chunks_follow_their_document_and_urls_are_unique_per_tenant(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0024")
        assert "knowledge_documents" not in await _tables(engine)
        await upgrade(engine, "0025")
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            url = "https://shop.example.com/returns"
            await connection.execute(text(DOCUMENT), {"id": "d1", "url": url, "at": AT})
            # Uploaded documents have no URL: any number of them.
            await connection.execute(text(DOCUMENT), {"id": "d2", "url": None, "at": AT})
            await connection.execute(text(DOCUMENT), {"id": "d3", "url": None, "at": AT})
            await connection.execute(text(CHUNK))
            chunks = text("SELECT count(*) FROM knowledge_chunks")
            assert (await connection.execute(chunks)).scalar() == 1
            await connection.execute(text("DELETE FROM knowledge_documents WHERE id = 'd1'"))
            assert (await connection.execute(chunks)).scalar() == 0
            await connection.execute(text(DOCUMENT), {"id": "d4", "url": url, "at": AT})
        with pytest.raises(IntegrityError):
            async with engine.begin() as connection:
                await connection.execute(text(DOCUMENT), {"id": "d5", "url": url, "at": AT})
        await downgrade(engine, "0024")
        assert "knowledge_documents" not in await _tables(engine)
        assert "knowledge_chunks" not in await _tables(engine)
        await upgrade(engine, "0025")
        assert {"knowledge_documents", "knowledge_chunks"} <= await _tables(engine)
    finally:
        await engine.dispose()
