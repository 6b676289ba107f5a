"""Revision 0022 adds the inbox's assignments and read marks; both follow their conversation
(deleting it, as an erasure does, deletes them), and the downgrade takes them away."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 2, tzinfo=UTC)
ROWS = (
    "INSERT INTO customers (id, created_at, updated_at) VALUES ('cu1', :at, :at)",
    "INSERT INTO conversations (id, conversation_key, customer_id, channel, external_id, "
    "owner, owner_since, last_message_at, created_at) "
    "VALUES ('co1', 'cu1:webchat', 'cu1', 'webchat', 'v1', 'bot', :at, :at, :at)",
    "INSERT INTO conversation_assignments (conversation_id, operator, assigned_by, assigned_at) "
    "VALUES ('co1', 'bia', 'ana', :at)",
    "INSERT INTO conversation_reads (conversation_id, operator, read_at) "
    "VALUES ('co1', 'ana', :at)",
)
TABLES = ("conversation_assignments", "conversation_reads")


async def _tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names)


async def test_assignments_and_reads_follow_their_conversation_and_go_with_a_downgrade(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0021")
        assert not set(TABLES) & await _tables(engine)
        await upgrade(engine, "0022")
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            for statement in ROWS:
                await connection.execute(text(statement), {"at": AT})
            counts = [
                (await connection.execute(text(f"SELECT count(*) FROM {table}"))).scalar()
                for table in TABLES
            ]
            assert counts == [1, 1]
            await connection.execute(text("DELETE FROM conversations WHERE id = 'co1'"))
            counts = [
                (await connection.execute(text(f"SELECT count(*) FROM {table}"))).scalar()
                for table in TABLES
            ]
            assert counts == [0, 0]
        await downgrade(engine, "0021")
        assert not set(TABLES) & await _tables(engine)
        await upgrade(engine, "0022")
        assert set(TABLES) <= await _tables(engine)
    finally:
        await engine.dispose()
