"""Episodes: one conversation on one channel (a chat closed by idle time, or one call)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.clock import utcnow
from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.models import Episode
from gateway.storage.records import EpisodeRecord


def episode_record(row: Episode) -> EpisodeRecord:
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


async def latest_open_episode(
    session: AsyncSession, customer_id: str, channel: str, identity_id: str | None = None
) -> EpisodeRecord | None:
    query = select(Episode).where(
        Episode.customer_id == require_customer(customer_id),
        Episode.channel == channel,
        Episode.status == "open",
    )
    if identity_id is not None:
        query = query.where(Episode.identity_id == identity_id)
    row = await session.scalar(query.order_by(Episode.last_message_at.desc()).limit(1))
    return episode_record(row) if row else None


async def touch_episode(session: AsyncSession, episode_id: str, at: datetime) -> None:
    row = await session.get(Episode, episode_id)
    if row is None:
        raise RecordNotFound(f"episode {episode_id} not found")
    if at > row.last_message_at:
        row.last_message_at = at


async def close_episode(session: AsyncSession, episode_id: str, at: datetime | None = None) -> None:
    row = await session.get(Episode, episode_id)
    if row is None:
        raise RecordNotFound(f"episode {episode_id} not found")
    row.status = "closed"
    row.ended_at = at or utcnow()


async def list_episodes(session: AsyncSession, customer_id: str) -> list[EpisodeRecord]:
    rows = await session.scalars(
        select(Episode)
        .where(Episode.customer_id == require_customer(customer_id))
        .order_by(Episode.started_at, Episode.id)
    )
    return [episode_record(row) for row in rows]
