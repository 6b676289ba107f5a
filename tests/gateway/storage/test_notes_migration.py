"""Revision 0024 adds the conversations' internal notes: they follow their conversation
(deleting it, as an erasure does, deletes them), and the downgrade takes them away."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect, text

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 3, tzinfo=UTC)
ROWS = (
    "INSERT INTO customers (id, created_at, updated_at) VALUES ('cu1', :at, :at)",
    "INSERT INTO conversations (id, conversation_key, customer_id, channel, external_id, "
    "owner, owner_since, last_message_at, created_at) "
    "VALUES ('co1', 'cu1:telegram', 'cu1', 'telegram', '42', 'bot', :at, :at, :at)",
    "INSERT INTO conversation_notes (conversation_id, author, text, created_at) "
    "VALUES ('co1', 'ana.ops', 'VIP', :at)",
)


async def _tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names)


async def test_notes_follow_their_conversation_and_go_with_a_downgrade(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0023")
        assert "conversation_notes" not in await _tables(engine)
        await upgrade(engine, "0024")
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            for statement in ROWS:
                await connection.execute(text(statement), {"at": AT})
            notes = text("SELECT count(*) FROM conversation_notes")
            assert (await connection.execute(notes)).scalar() == 1
            await connection.execute(text("DELETE FROM conversations WHERE id = 'co1'"))
            assert (await connection.execute(notes)).scalar() == 0
        await downgrade(engine, "0023")
        assert "conversation_notes" not in await _tables(engine)
        await upgrade(engine, "0024")
        assert "conversation_notes" in await _tables(engine)
    finally:
        await engine.dispose()
