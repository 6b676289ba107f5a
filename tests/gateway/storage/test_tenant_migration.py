"""Revision 0015 records a tenant on existing rows: the default domain, except an inbox row
written before it, which keeps the host its webhook came through."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from gateway.storage.migrate import upgrade
from gateway.tenant_ref import TenantRef
from tests.gateway.storage.test_migrations import empty_database  # noqa: F401  (fixture)
from tests.support.databases import DatabaseUnderTest

INSERT_INBOX_ROW = text(
    "INSERT INTO inbox_messages (channel, provider_message_id, thread_key, host, payload, "
    "received_at, attempts) VALUES ('whatsapp', :sid, 'whatsapp:+5511999990000', :host, '{}', "
    ":at, 0)"
)


async def test_existing_rows_get_the_default_tenant_and_inbox_rows_their_host(
    empty_database: DatabaseUnderTest,  # noqa: F811
) -> None:
    engine = empty_database.engine()
    try:
        await upgrade(engine, "0014")
        async with engine.begin() as connection:
            at = datetime(2026, 12, 1, tzinfo=UTC)
            for sid, host in (("SM-1", "shop.example.com"), ("SM-2", None), ("SM-3", "a/b%c")):
                await connection.execute(INSERT_INBOX_ROW, {"sid": sid, "host": host, "at": at})
        await upgrade(engine)
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT provider_message_id, tenant FROM inbox_messages")
            )
            tenants = {sid: TenantRef.decode(tenant) for sid, tenant in rows}
        assert tenants == {
            "SM-1": TenantRef.for_host("shop.example.com"),
            "SM-2": TenantRef(),
            "SM-3": TenantRef.for_host("a/b%c"),
        }
    finally:
        await engine.dispose()
