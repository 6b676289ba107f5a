"""Episodes: one conversation on one channel (a chat closed by idle time, or one call)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from sqlalchemy import bindparam, case, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.models import Episode
from gateway.storage.records import EpisodeRecord
from gateway.storage.repositories.bound_lists import (
    ByDialect,
    as_arrays,
    rows_in,
    rows_params,
)
from gateway.storage.repositories.tables import EPISODES, AnyRow
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef

# Plain rows of the table, not ORM objects: every message reads its episode, every answer
# all of the customer's.
_OPEN = (
    select(EPISODES)
    .where(
        EPISODES.c.customer_id == bindparam("customer_id"),
        EPISODES.c.channel == bindparam("channel"),
        EPISODES.c.status == "open",
    )
    .order_by(EPISODES.c.last_message_at.desc())
    .limit(1)
)
_OPEN_OF_IDENTITY = _OPEN.where(EPISODES.c.identity_id == bindparam("identity_id"))
_OPEN_OF_MANY = ByDialect.build(
    lambda arrays: (
        select(EPISODES)
        .where(
            EPISODES.c.status == "open",
            rows_in(
                (EPISODES.c.customer_id, EPISODES.c.channel, EPISODES.c.identity_id),
                "keys",
                arrays=arrays,
            ),
        )
        .order_by(EPISODES.c.last_message_at.desc())
    )
)
_OF_CUSTOMER = (
    select(EPISODES)
    .where(EPISODES.c.customer_id == bindparam("customer_id"))
    .order_by(EPISODES.c.started_at, EPISODES.c.id)
)
_AT = bindparam("at", type_=EPISODES.c.last_message_at.type)
_RECORD_MESSAGE = (
    EPISODES.update()
    .where(EPISODES.c.id == bindparam("episode_id"))
    .values(
        token_total=EPISODES.c.token_total + bindparam("tokens"),
        last_message_at=case(
            (EPISODES.c.last_message_at < _AT, _AT), else_=EPISODES.c.last_message_at
        ),
    )
)


def episode_record(row: Episode | AnyRow) -> EpisodeRecord:
    """From an ORM row, or a Core row of the episodes table (the same attribute names)."""
    return EpisodeRecord(
        id=row.id,
        customer_id=row.customer_id,
        channel=row.channel,
        identity_id=row.identity_id,
        external_ref=row.external_ref,
        campaign_id=row.campaign_id,
        status=row.status,
        version=row.version,
        transcript_confidence=row.transcript_confidence,
        started_at=row.started_at,
        last_message_at=row.last_message_at,
        ended_at=row.ended_at,
        token_total=row.token_total,
        tenant=TenantRef.decode(row.tenant),
    )


async def open_episode(
    session: AsyncSession,
    *,
    customer_id: str,
    channel: str,
    identity_id: str | None = None,
    external_ref: str | None = None,
    campaign_id: str | None = None,
    started_at: datetime | None = None,
    transcript_confidence: float | None = None,
    tenant: TenantRef = DEFAULT_TENANT,
) -> EpisodeRecord:
    now = started_at or utcnow()
    row = Episode(
        customer_id=require_customer(customer_id),
        channel=channel,
        identity_id=identity_id,
        external_ref=external_ref,
        campaign_id=campaign_id,
        started_at=now,
        last_message_at=now,
        transcript_confidence=transcript_confidence,
        tenant=tenant.encode(),
    )
    session.add(row)
    await session.flush()
    return episode_record(row)


async def get_episode(session: AsyncSession, customer_id: str, episode_id: str) -> EpisodeRecord:
    row = await session.scalar(
        select(Episode).where(
            Episode.customer_id == require_customer(customer_id), Episode.id == episode_id
        )
    )
    if row is None:
        raise RecordNotFound(f"episode {episode_id} not found")
    return episode_record(row)


async def episode_by_external_ref(session: AsyncSession, external_ref: str) -> EpisodeRecord | None:
    """The episode of an outside conversation (a call: `call:<call id>`), whoever's it is."""
    row = await session.scalar(select(Episode).where(Episode.external_ref == external_ref))
    return episode_record(row) if row else None


async def lock_episode(session: AsyncSession, episode_id: str) -> EpisodeRecord | None:
    """Read the episode and, on PostgreSQL, lock its row until the commit, so that work on one
    episode (its compactions) runs one at a time; SQLite transactions are already exclusive."""
    query = select(EPISODES).where(EPISODES.c.id == episode_id)
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        query = query.with_for_update()
    row = (await session.execute(query)).first()
    return episode_record(row) if row else None


async def set_transcript_version(
    session: AsyncSession, episode_id: str, version: int, *, transcript_confidence: float | None
) -> None:
    """Move the episode to another transcript version (a call posted again with another
    transcript), with that transcript's confidence."""
    await session.execute(
        update(Episode)
        .where(Episode.id == episode_id)
        .values(version=version, transcript_confidence=transcript_confidence)
    )


async def latest_open_episode(
    session: AsyncSession, customer_id: str, channel: str, identity_id: str | None = None
) -> EpisodeRecord | None:
    params = {"customer_id": require_customer(customer_id), "channel": channel}
    query = _OPEN
    if identity_id is not None:
        query, params["identity_id"] = _OPEN_OF_IDENTITY, identity_id
    row = (await session.execute(query, params)).first()
    return episode_record(row) if row else None


async def latest_open_episodes(
    session: AsyncSession, keys: Iterable[tuple[str, str, str]]
) -> dict[tuple[str, str, str], EpisodeRecord]:
    """`latest_open_episode` for several (customer, channel, identity) keys in one statement;
    a key without an open episode is left out."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    found: dict[tuple[str, str, str], EpisodeRecord] = {}
    params = rows_params("keys", wanted, width=3, arrays=as_arrays(session))
    for row in await session.execute(_OPEN_OF_MANY.of(session), params):
        found.setdefault((row.customer_id, row.channel, row.identity_id), episode_record(row))
    return found


async def touch_episode(session: AsyncSession, episode_id: str, at: datetime) -> None:
    row = await session.get(Episode, episode_id)
    if row is None:
        raise RecordNotFound(f"episode {episode_id} not found")
    if at > row.last_message_at:
        row.last_message_at = at


async def record_message(
    session: AsyncSession, episode_id: str, *, at: datetime, tokens: int
) -> None:
    """Add a stored message to its episode: tokens to the running total, `last_message_at`
    moved forward (never back), in one UPDATE. It locks the episode row until the commit, so
    run it last in the transaction: concurrent messages of one conversation queue on it."""
    await session.execute(_RECORD_MESSAGE, {"episode_id": episode_id, "tokens": tokens, "at": at})


async def record_messages(session: AsyncSession, added: Mapping[str, tuple[datetime, int]]) -> None:
    """`record_message` for several episodes at once: {episode id: (newest message time, tokens
    added)}. The rows are updated in id order, so two writers never lock them in opposite
    orders; run it last in the transaction, as `record_message`."""
    if added:
        await session.execute(
            _RECORD_MESSAGE,
            [
                {"episode_id": episode_id, "at": at, "tokens": tokens}
                for episode_id, (at, tokens) in sorted(added.items())
            ],
        )


async def close_episode(session: AsyncSession, episode_id: str, at: datetime | None = None) -> None:
    row = await session.get(Episode, episode_id)
    if row is None:
        raise RecordNotFound(f"episode {episode_id} not found")
    row.status = "closed"
    row.ended_at = at or utcnow()


async def list_episodes(session: AsyncSession, customer_id: str) -> list[EpisodeRecord]:
    """The customer's episodes, oldest first (read as plain rows: every answer reads them)."""
    rows = await session.execute(_OF_CUSTOMER, {"customer_id": require_customer(customer_id)})
    return [episode_record(row) for row in rows]
