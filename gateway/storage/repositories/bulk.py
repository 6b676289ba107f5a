"""Bulk writes of whole stored conversations (benchmark and evaluation fixtures): a customer's
identities on several channels at once, and episodes with their messages in multi-row inserts,
with the invariants ingest keeps — each message's token count as given, each episode's
``token_total`` the sum of its messages' counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import require_customer
from gateway.storage.models import Episode, Message, new_id
from gateway.storage.records import ChannelIdentityRecord, EpisodeRecord
from gateway.storage.repositories import customers

# Rows per INSERT statement: keeps each statement's parameter list bounded.
INSERT_BATCH = 5_000


@dataclass(frozen=True, slots=True)
class BulkMessage:
    role: str
    text: str
    token_count: int
    created_at: datetime
    provider_message_id: str | None = None
    transcript_confidence: float | None = None


@dataclass(frozen=True, slots=True)
class BulkEpisode:
    """An episode and its messages, in order; a closed one ends at ``last_message_at``."""

    channel: str
    identity_id: str | None
    started_at: datetime
    last_message_at: datetime
    messages: tuple[BulkMessage, ...]
    closed: bool = False
    transcript_confidence: float | None = None


@dataclass(frozen=True, slots=True)
class WrittenEpisode:
    """A bulk-written episode and the ids of its messages, in the order given."""

    episode: EpisodeRecord
    message_ids: tuple[int, ...]


async def create_identities(
    session: AsyncSession,
    customer_id: str,
    identities: Mapping[str, tuple[str, str]],
    *,
    description: str,
) -> dict[str, ChannelIdentityRecord]:
    """One identity of ``customer_id`` per channel of ``identities`` (channel → external id and
    link level), each with the evidence ``{"description": description, "level": level}``; the
    records by channel."""
    created: dict[str, ChannelIdentityRecord] = {}
    for channel, (external_id, level) in identities.items():
        created[channel] = await customers.create_identity(
            session,
            customer_id=customer_id,
            channel=channel,
            external_id=external_id,
            link_level=level,
            evidence={"description": description, "level": level},
        )
    return created


async def write_episodes(
    session: AsyncSession, customer_id: str, episodes: Sequence[BulkEpisode]
) -> list[WrittenEpisode]:
    """Insert ``episodes`` of ``customer_id`` with all their messages (no commit); one
    `WrittenEpisode` per episode, in order."""
    customer_id = require_customer(customer_id)
    records = [_record(customer_id, episode) for episode in episodes]
    if not records:
        return []
    await session.execute(
        insert(Episode),
        [
            {
                "id": record.id,
                "customer_id": customer_id,
                "channel": record.channel,
                "identity_id": record.identity_id,
                "status": record.status,
                "transcript_confidence": record.transcript_confidence,
                "token_total": sum(message.token_count for message in episode.messages),
                "started_at": record.started_at,
                "last_message_at": record.last_message_at,
                "ended_at": record.ended_at,
            }
            for record, episode in zip(records, episodes, strict=True)
        ],
    )
    written = []
    for record, episode in zip(records, episodes, strict=True):
        rows = [
            {
                "customer_id": customer_id,
                "episode_id": record.id,
                "identity_id": episode.identity_id,
                "channel": episode.channel,
                "role": message.role,
                "text": message.text,
                "provider_message_id": message.provider_message_id,
                "token_count": message.token_count,
                "transcript_confidence": message.transcript_confidence,
                "redacted": False,
                "created_at": message.created_at,
            }
            for message in episode.messages
        ]
        for start in range(0, len(rows), INSERT_BATCH):
            await session.execute(insert(Message), rows[start : start + INSERT_BATCH])
        # Ids grow with insertion order, so the episode's ids in order are its messages'.
        ids = await session.scalars(
            select(Message.id).where(Message.episode_id == record.id).order_by(Message.id)
        )
        written.append(WrittenEpisode(record, tuple(ids)))
    return written


def _record(customer_id: str, episode: BulkEpisode) -> EpisodeRecord:
    return EpisodeRecord(
        id=new_id(),
        customer_id=customer_id,
        channel=episode.channel,
        identity_id=episode.identity_id,
        external_ref=None,
        campaign_id=None,
        status="closed" if episode.closed else "open",
        version=1,
        transcript_confidence=episode.transcript_confidence,
        started_at=episode.started_at,
        last_message_at=episode.last_message_at,
        ended_at=episode.last_message_at if episode.closed else None,
        token_total=sum(message.token_count for message in episode.messages),
    )
