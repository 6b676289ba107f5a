"""The turns of a customer's calls that recall reads: a call's raw transcript, newest first.

Only the columns recall needs are fetched, with the metadata that says which transcript
version a turn belongs to and whether it is speech at all; `gateway.memory.recall` keeps the
turns of each call's current version and masks them before they are indexed.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.message_meta import MessageMeta, decode_meta
from gateway.storage.models import Message
from gateway.storage.repositories.messages import remembered_turns

__all__ = ["CallTurnLine", "call_turns"]


@dataclass(frozen=True, slots=True)
class CallTurnLine:
    """One transcribed turn of a call, as recall reads it."""

    id: int
    episode_id: str
    role: str
    text: str
    created_at: datetime
    supersedes_id: int | None
    transcript_confidence: float | None
    meta: MessageMeta  # speaker, transcript version, speech flags

    def current_in(self, episode_version: int) -> bool:
        """Whether the turn is speech of the episode's current transcript version."""
        return self.meta.in_transcript(episode_version) and self.meta.is_speech


async def call_turns(
    session: AsyncSession,
    customer_id: str,
    *,
    channels: Collection[str],
    limit: int,
    exclude_episode: str | None = None,
    identity_id: str | None = None,
) -> list[CallTurnLine]:
    """The customer's newest `limit` user and assistant turns on `channels` (not canned),
    newest first, outside `exclude_episode` and, with `identity_id`, of that identity only."""
    query = select(
        Message.id,
        Message.episode_id,
        Message.role,
        Message.text,
        Message.created_at,
        Message.supersedes_id,
        Message.transcript_confidence,
        Message.extra,
    ).where(
        Message.channel.in_(sorted(channels)),
        *remembered_turns(customer_id, exclude_episode, identity_id),
    )
    rows = await session.execute(query.order_by(Message.id.desc()).limit(limit))
    return [
        CallTurnLine(
            id=message_id,
            episode_id=episode_id,
            role=role,
            text=text,
            created_at=created_at,
            supersedes_id=supersedes_id,
            transcript_confidence=confidence,
            meta=decode_meta(extra),
        )
        for message_id, episode_id, role, text, created_at, supersedes_id, confidence, extra in rows
    ]
