"""Revision 0026 adds the vectors kept beside their rows: a vector follows its message (and
its customer) when they are deleted, a row naming no subject of its kind is refused, and the
downgrade takes the table away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 5, tzinfo=UTC)
ROWS = (
    "INSERT INTO customers (id, created_at, updated_at) VALUES ('cu1', :at, :at)",
    "INSERT INTO episodes (id, customer_id, channel, status, version, token_total, tenant, "
    "started_at, last_message_at) "
    "VALUES ('ep1', 'cu1', 'telegram', 'open', 1, 0, 't1', :at, :at)",
    "INSERT INTO messages (id, customer_id, episode_id, channel, role, text, token_count, "
    "redacted, tenant, created_at) "
    "VALUES (7, 'cu1', 'ep1', 'telegram', 'user', 'hello', 1, false, 't1', :at)",
    "INSERT INTO embeddings (kind, message_id, customer_id, tenant, model, dimensions, vector, "
    "created_at) VALUES ('message', 7, 'cu1', 't1', 'm', 1, :vector, :at)",
)
VECTOR = b"\x00\x00\x80\x3f"  # 1.0 as float32, little-endian


async def _tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names)


async def test_vectors_follow_their_message_and_go_with_a_downgrade(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0025")
        assert "embeddings" not in await _tables(engine)
        await upgrade(engine, "0026")
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            for statement in ROWS:
                await connection.execute(text(statement), {"at": AT, "vector": VECTOR})
            vectors = text("SELECT count(*) FROM embeddings")
            assert (await connection.execute(vectors)).scalar() == 1
            with pytest.raises(IntegrityError):  # a second vector of the same model
                async with connection.begin_nested():
                    await connection.execute(text(ROWS[-1]), {"at": AT, "vector": VECTOR})
            with pytest.raises(IntegrityError):  # a message's vector naming no message
                async with connection.begin_nested():
                    await connection.execute(
                        text(ROWS[-1].replace("'message', 7", "'message', NULL")),
                        {"at": AT, "vector": VECTOR},
                    )
            await connection.execute(text("DELETE FROM messages WHERE id = 7"))
            assert (await connection.execute(vectors)).scalar() == 0
        await downgrade(engine, "0025")
        assert "embeddings" not in await _tables(engine)
        await upgrade(engine, "0026")
        assert "embeddings" in await _tables(engine)
    finally:
        await engine.dispose()
