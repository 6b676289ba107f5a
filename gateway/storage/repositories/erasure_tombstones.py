"""Erasure tombstones: the provider ids of erased messages, hashed, kept until they expire, so a
provider's late retry of an erased message is recognised (and dropped) rather than stored again
as a new customer.

The key is the SHA-256 of the channel and the provider message id, unkeyed: those ids are
the providers' own random identifiers (a Twilio SID, a WhatsApp wamid, a Telegram update id, a
web chat visitor's signed id with the widget's message id), so the hash names no person and
cannot be turned back into a phone number; and no key can change under it and silently void
the tombstones while they are still needed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Final

from sqlalchemy import String, any_, bindparam, delete, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.expression import Executable

from gateway.storage.models import ErasureTombstone
from gateway.storage.repositories.scrub import rowcount
from gateway.storage.repositories.tables import table_of

TOMBSTONES: Final = table_of(ErasureTombstone)
_LABEL: Final = b"relaydesk erased message v1\x00"
_CHUNK: Final = 500


_PG: Final = pg_insert(TOMBSTONES)
_SQLITE: Final = sqlite_insert(TOMBSTONES)
# Erased twice (a message, then its customer): the newer erasure's expiry holds.
_KEEP: Final[dict[str, Executable]] = {
    "postgresql": _PG.on_conflict_do_update(
        index_elements=["key_sha256"], set_={"expires_at": _PG.excluded.expires_at}
    ),
    "sqlite": _SQLITE.on_conflict_do_update(
        index_elements=["key_sha256"], set_={"expires_at": _SQLITE.excluded.expires_at}
    ),
}
# Looked up for every lot of inbound messages. On PostgreSQL the keys go as one array: an
# expanding IN would be a statement of its own for each number of keys, each prepared on every
# connection, crowding the hot statements out of the prepared statement cache.
_LIVE: Final[dict[str, Executable]] = {
    "postgresql": select(TOMBSTONES.c.key_sha256).where(
        TOMBSTONES.c.key_sha256 == any_(bindparam("keys", type_=ARRAY(String))),
        TOMBSTONES.c.expires_at > bindparam("now"),
    ),
    "sqlite": select(TOMBSTONES.c.key_sha256).where(
        TOMBSTONES.c.key_sha256.in_(bindparam("keys", expanding=True)),
        TOMBSTONES.c.expires_at > bindparam("now"),
    ),
}


def tombstone_key(channel: str, provider_message_id: str) -> str:
    """The SHA-256 (hex) a message of `channel` with this provider id is remembered by."""
    digest = hashlib.sha256(_LABEL)
    digest.update(channel.encode("utf-8") + b"\x00" + provider_message_id.encode("utf-8"))
    return digest.hexdigest()


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else ""


async def keep(
    session: AsyncSession, provider_messages: Collection[tuple[str, str]], *, until: datetime
) -> int:
    """Remember the erased messages' (channel, provider id) until `until`; how many."""
    keys = sorted(
        {tombstone_key(channel, provider_id) for channel, provider_id in provider_messages}
    )
    statement = _KEEP["postgresql" if _dialect(session) == "postgresql" else "sqlite"]
    for start in range(0, len(keys), _CHUNK):
        rows = [{"key_sha256": key, "expires_at": until} for key in keys[start : start + _CHUNK]]
        await session.execute(statement, rows)
    return len(keys)


async def erased_among(
    session: AsyncSession, provider_messages: Sequence[tuple[str, str]], *, now: datetime
) -> set[tuple[str, str]]:
    """The (channel, provider id) of `provider_messages` that name an erased message whose
    tombstone has not expired by `now`."""
    if not provider_messages:
        return set()
    by_key = {tombstone_key(channel, pid): (channel, pid) for channel, pid in provider_messages}
    statement = _LIVE["postgresql" if _dialect(session) == "postgresql" else "sqlite"]
    found = await session.scalars(statement, {"keys": list(by_key), "now": now})
    return {by_key[key] for key in found}


async def purge_expired(session: AsyncSession, *, now: datetime) -> int:
    """Delete the tombstones expired by `now`; how many went."""
    result = await session.execute(
        delete(ErasureTombstone)
        .where(ErasureTombstone.expires_at <= now)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result)
