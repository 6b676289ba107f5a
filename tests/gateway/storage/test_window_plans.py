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


# Many customers with a few episodes each, and statistics: on an empty table every index
# costs the same and the planner's pick says nothing.
_HISTORY = (
    "INSERT INTO customers (id, created_at, updated_at)"
    " SELECT 'c' || n, now(), now() FROM generate_series(1, 200) AS n",
    "INSERT INTO episodes (id, customer_id, channel, status, version, started_at,"
    " last_message_at) SELECT 'e' || n, 'c' || (1 + n % 200), 'whatsapp', 'closed', 1, now(),"
    " now() FROM generate_series(1, 1000) AS n",
    "INSERT INTO messages (customer_id, episode_id, channel, role, text, token_count, redacted,"
    " created_at) SELECT 'c' || (1 + (1 + n % 1000) % 200), 'e' || (1 + n % 1000), 'whatsapp',"
    " 'user', 'oi', 1, false, now() FROM generate_series(1, 20000) AS n",
    "ANALYZE customers, episodes, messages",
)


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
            # All in one transaction rolled back: the shared schema keeps neither the rows nor
            # their statistics.
            transaction = await connection.begin()
            try:
                for statement in _HISTORY:
                    await connection.exec_driver_sql(statement)
                await connection.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
                await connection.exec_driver_sql(f"PREPARE window_lines AS {compiled.string}")
                plan = "\n".join(
                    row[0]
                    for row in await connection.exec_driver_sql(
                        f"EXPLAIN EXECUTE window_lines({arguments})"
                    )
                )
                await connection.exec_driver_sql("DEALLOCATE window_lines")
            finally:
                await transaction.rollback()
    finally:
        await engine.dispose()
    # Only the episode's rows, newest first: through an index led by the customer and the
    # episode, no sort.
    assert f"Index Scan Backward using {INDEX}" in plan, plan
    condition = next(line for line in plan.splitlines() if "Index Cond" in line)
    assert "episode_id" in condition, plan
    assert "Sort" not in plan, plan
