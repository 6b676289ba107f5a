from __future__ import annotations

import pytest
from sqlalchemy import inspect

from gateway.storage.migrate import current_revision, downgrade, head_revision, upgrade
from gateway.storage.models import Base
from tests.support.databases import (
    DatabaseUnderTest,
    create_schema,
    drop_schema,
    postgres_reachable,
    unavailable,
)


@pytest.fixture(params=["sqlite", "postgresql"])
async def empty_database(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield DatabaseUnderTest("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'm.db'}")
        return
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    from tests.support.databases import POSTGRES_URL

    schema = await create_schema()
    try:
        yield DatabaseUnderTest("postgresql", POSTGRES_URL, schema=schema)
    finally:
        await drop_schema(schema)


async def _tables(database: DatabaseUnderTest) -> set[str]:
    engine = database.engine()
    try:
        async with engine.connect() as connection:
            names = await connection.run_sync(lambda c: inspect(c).get_table_names())
        return set(names) - {"alembic_version"}
    finally:
        await engine.dispose()


async def test_upgrade_from_empty_to_head_then_down_one_and_back(
    empty_database: DatabaseUnderTest,
) -> None:
    engine = empty_database.engine()
    try:
        assert await current_revision(engine) is None
        await upgrade(engine)
        assert await current_revision(engine) == head_revision()
        assert await _tables(empty_database) == set(Base.metadata.tables)
        await downgrade(engine, "-1")
        after_down = await current_revision(engine)
        assert after_down != head_revision()
        await upgrade(engine)
        assert await current_revision(engine) == head_revision()
        assert await _tables(empty_database) == set(Base.metadata.tables)
    finally:
        await engine.dispose()


async def test_migrated_schema_matches_the_models(empty_database: DatabaseUnderTest) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    engine = empty_database.engine()
    try:
        await upgrade(engine)

        def diff(connection):  # type: ignore[no-untyped-def]
            context = MigrationContext.configure(connection, opts={"compare_type": False})
            return compare_metadata(context, Base.metadata)

        async with engine.connect() as connection:
            differences = await connection.run_sync(diff)
        assert differences == []
    finally:
        await engine.dispose()
