"""The window's newest turns of an episode read through one index on PostgreSQL, even under
the generic plan a prepared statement gets after a few executions (asyncpg prepares every
statement): without it that plan walked the primary key backwards from the newest message of
every customer."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from gateway.storage.repositories.messages import _LINES
from tests.support.databases import DatabaseUnderTest

INDEX = "ix_messages_customer_episode_id"


@pytest.mark.parametrize("after", [False, True])
@pytest.mark.parametrize("before", [False, True])
async def test_window_lines_use_the_customer_episode_index_in_a_generic_plan(
    postgres_database: DatabaseUnderTest, after: bool, before: bool
) -> None:
    engine = postgres_database.engine()
    compiled = _LINES[(after, before)].compile(dialect=engine.dialect)  # $1, $2, … as sent
    values = {
        "extra_1": "canned",
        "extra_2": "author",
        "param_1": "operator",
        "extra_3": "actor",
        "customer_id": "c1",
        "episode_id": "e1",
        "after_id": 1,
        "before_id": 1_000,
        "limit": 400,
    }
    arguments = ", ".join(
        f"'{values[name]}'" if isinstance(values[name], str) else str(values[name])
        for name in compiled.positiontup or ()
    )
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SET plan_cache_mode = force_generic_plan"))
            await connection.execute(text("SET enable_seqscan = off"))  # a near-empty table
            await connection.exec_driver_sql(f"PREPARE window_lines AS {compiled.string}")
            plan = "\n".join(
                row[0]
                for row in await connection.exec_driver_sql(
                    f"EXPLAIN EXECUTE window_lines({arguments})"
                )
            )
    finally:
        await engine.dispose()
    assert f"Index Scan Backward using {INDEX}" in plan, plan
    assert "Sort" not in plan and "Filter" not in plan, plan
