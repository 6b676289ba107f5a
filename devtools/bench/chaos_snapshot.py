"""The gateway's rows the chaos checks read after the settle, in one snapshot (one repeatable
read transaction: a message moving from the inbox to its turn is seen in one place)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from devtools.bench.chaos_records import InboxRow, Outbound, Snapshot, StoredMessage, Turn


async def read_snapshot(database_url: str) -> Snapshot:
    engine = create_async_engine(
        database_url, poolclass=NullPool, isolation_level="REPEATABLE READ"
    )
    try:
        async with engine.connect() as connection:
            messages = await connection.execute(
                text(
                    "SELECT id, provider_message_id FROM messages "
                    "WHERE role = 'user' AND channel = 'whatsapp' ORDER BY id"
                )
            )
            inbox = await connection.execute(
                text("SELECT provider_message_id, dead_at IS NOT NULL FROM inbox_messages")
            )
            turns = await connection.execute(
                text(
                    "SELECT id, inbound_message_id, conversation_key, status, delivery_status "
                    "FROM turns ORDER BY id"
                )
            )
            outbound = await connection.execute(
                text("SELECT provider_message_id, turn_id, part FROM outbound_messages")
            )
            return Snapshot(
                messages=tuple(StoredMessage(int(i), str(sid)) for i, sid in messages),
                inbox=tuple(InboxRow(str(sid), bool(dead)) for sid, dead in inbox),
                turns=tuple(
                    Turn(int(i), int(inbound), str(key), str(status), delivery)
                    for i, inbound, key, status, delivery in turns
                ),
                outbound=tuple(
                    Outbound(str(sid), None if turn is None else int(turn), int(part))
                    for sid, turn, part in outbound
                ),
            )
    finally:
        await engine.dispose()
