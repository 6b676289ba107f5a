"""Revision 0023 adds the satisfaction surveys: a score only from 1 to 5, surveys follow their
conversation (deleting it, as an erasure does, deletes them), and the downgrade takes them
away."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 3, tzinfo=UTC)
ROWS = (
    "INSERT INTO customers (id, created_at, updated_at) VALUES ('cu1', :at, :at)",
    "INSERT INTO conversations (id, conversation_key, customer_id, channel, external_id, "
    "owner, owner_since, last_message_at, created_at) "
    "VALUES ('co1', 'cu1:telegram', 'cu1', 'telegram', '42', 'bot', :at, :at, :at)",
)
SURVEY = text(
    "INSERT INTO csat_surveys (conversation_id, customer_id, channel, tenant, trigger, "
    "person_took_part, asked_at, score) "
    "VALUES ('co1', 'cu1', 'telegram', '', 'handed_back', :person, :at, :score)"
)


async def _tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: inspect(sync).get_table_names())
    return set(names)


async def test_surveys_keep_scores_1_to_5_follow_their_conversation_and_go_with_a_downgrade(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0022")
        assert "csat_surveys" not in await _tables(engine)
        await upgrade(engine, "0023")
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            for statement in ROWS:
                await connection.execute(text(statement), {"at": AT})
            await connection.execute(SURVEY, {"at": AT, "person": True, "score": 4})
            await connection.execute(SURVEY, {"at": AT, "person": False, "score": None})
            rows = await connection.execute(
                text("SELECT score, person_took_part FROM csat_surveys ORDER BY id")
            )
            assert [(score, bool(person)) for score, person in rows] == [(4, True), (None, False)]
        with pytest.raises(IntegrityError):
            async with engine.begin() as connection:
                await connection.execute(SURVEY, {"at": AT, "person": False, "score": 6})
        async with engine.begin() as connection:
            if empty_database.backend == "sqlite":
                await connection.execute(text("PRAGMA foreign_keys = ON"))
            await connection.execute(text("DELETE FROM conversations WHERE id = 'co1'"))
            count = (await connection.execute(text("SELECT count(*) FROM csat_surveys"))).scalar()
            assert count == 0
        await downgrade(engine, "0022")
        assert "csat_surveys" not in await _tables(engine)
        await upgrade(engine, "0023")
        assert "csat_surveys" in await _tables(engine)
    finally:
        await engine.dispose()
