"""Revision 0021 makes every account stored before it an admin (nobody is locked out by the
upgrade), keeps a disabled account disabled, and makes later accounts agents by default."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from gateway.storage.migrate import downgrade, upgrade
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

INSERT_0020 = text(
    "INSERT INTO operators (id, username, password_hash, disabled, created_at) "
    "VALUES (:id, :username, 'scrypt$x', :disabled, :at)"
)
INSERT_0021 = text(
    "INSERT INTO operators (id, username, password_hash, created_at) "
    "VALUES ('c3', 'carla', 'scrypt$x', :at)"
)
CREATED = datetime(2026, 12, 1, 9, tzinfo=UTC)


async def test_existing_accounts_become_admins_and_keep_their_state(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0020")
        async with engine.begin() as connection:
            for id_, username, disabled in (("a1", "ana", False), ("b2", "bia", True)):
                await connection.execute(
                    INSERT_0020,
                    {"id": id_, "username": username, "disabled": disabled, "at": CREATED},
                )
        await upgrade(engine, "0021")
        async with engine.begin() as connection:
            await connection.execute(INSERT_0021, {"at": CREATED})
            rows = await connection.execute(
                text("SELECT username, role, disabled_at IS NOT NULL FROM operators")
            )
            assert sorted(tuple(row) for row in rows) == [
                ("ana", "admin", False),
                ("bia", "admin", True),
                ("carla", "agent", False),
            ]
        await downgrade(engine, "0020")
        async with engine.connect() as connection:
            rows = await connection.execute(text("SELECT username, disabled FROM operators"))
            assert sorted((name, bool(disabled)) for name, disabled in rows) == [
                ("ana", False),
                ("bia", True),
                ("carla", False),
            ]
    finally:
        await engine.dispose()
