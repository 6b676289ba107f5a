"""Schema migrations with Alembic, driven programmatically (`relaydesk migrate`, auto on serve)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

MIGRATIONS_DIR = Path(__file__).with_name("migrations")


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    # Alembic's ini interpolation treats '%' specially; URLs may carry escaped passwords.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the database behind `engine` to `revision` on one of its connections."""
    config = alembic_config(engine.url.render_as_string(hide_password=False))

    def _upgrade(connection: Connection) -> None:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)

    async with engine.begin() as connection:
        await _without_timeouts(connection)
        await connection.run_sync(_upgrade)


async def _without_timeouts(connection: AsyncConnection) -> None:
    """A migration may rewrite a large table: the serving engine's statement timeout must not
    cut it half-way. `SET LOCAL` ends with the migration's transaction."""
    if connection.dialect.name == "postgresql":
        await connection.execute(text("SET LOCAL statement_timeout = 0"))
        await connection.execute(text("SET LOCAL idle_in_transaction_session_timeout = 0"))


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    config = alembic_config(engine.url.render_as_string(hide_password=False))

    def _downgrade(connection: Connection) -> None:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)

    async with engine.begin() as connection:
        await _without_timeouts(connection)
        await connection.run_sync(_downgrade)


async def current_revision(engine: AsyncEngine) -> str | None:
    def _current(connection: Connection) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(_current)


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
