"""Recall from storage: the customer's past material most relevant to the current message.

What may be retrieved is decided before anything is scored:

* summary sentences (`EpisodeSummary.sentences`) of the customer's other episodes, on any channel
  — a phone call enters only this way; summaries already mask identifiers;
* raw turns of the customer's other episodes on typed channels (WhatsApp, web chat, Telegram):
  never a phone turn, never a transcribed voice note (a message with a transcript confidence).
  Raw turns are not masked, so they are offered only to an identity allowed every fact scope
  (`RAW_TURN_SCOPES`); any other identity gets raw turns only of its own identity.

The lexical index is built per request from storage (a couple of indexed reads of at most
`MAX_TURNS` rows and `MAX_SUMMARIES` summaries) and scored by `context.recall`; at a few thousand
short lines per customer this costs milliseconds to tens of milliseconds, so no cache is kept.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime
from typing import Final

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from context import SummaryItem, TokenCounter
from context.compaction.types import FACT_SCOPES
from context.recall import RecallCandidate, RecallEpisode, recall
from gateway.storage.errors import require_customer
from gateway.storage.models import Message
from gateway.storage.records import EpisodeRecord, SummaryRecord
from gateway.storage.repositories import episodes, summaries

__all__ = ["MAX_SUMMARIES", "MAX_TURNS", "RAW_TURN_SCOPES", "RecallScope", "recall_items"]

TRANSCRIPT_CHANNELS: Final = frozenset({"phone"})
# The newest raw turns and summaries considered per request.
MAX_TURNS: Final = 5_000
MAX_SUMMARIES: Final = 400
# An identity must be allowed all of these to be offered other identities' raw turns.
RAW_TURN_SCOPES: Final = frozenset(FACT_SCOPES.values())


@dataclass(frozen=True, slots=True)
class RecallScope:
    """Who is asking: the customer, the asking identity and what it may see."""

    customer_id: str
    identity_id: str | None
    allowed_scopes: Collection[str]
    own_facts_only: bool = False

    @property
    def all_raw_turns(self) -> bool:
        return not self.own_facts_only and RAW_TURN_SCOPES <= set(self.allowed_scopes)


def _speaker(extra: dict[str, object] | None, role: str) -> str:
    name = (extra or {}).get("speaker")
    if name:
        return str(name)
    return "Customer" if role == "user" else "Assistant"


def _episode(record: EpisodeRecord) -> RecallEpisode:
    transcript = record.channel in TRANSCRIPT_CHANNELS
    return RecallEpisode(
        id=record.id,
        channel=record.channel,
        modality="transcript" if transcript else "typed",
        started_at=record.started_at,
        ended_at=record.ended_at or record.last_message_at,
        confidence=record.transcript_confidence if transcript else None,
    )


async def _turns(
    session: AsyncSession, scope: RecallScope, exclude_episode: str | None
) -> list[RecallCandidate]:
    query = select(Message).where(
        Message.customer_id == require_customer(scope.customer_id),
        Message.channel.not_in(sorted(TRANSCRIPT_CHANNELS)),
        Message.role.in_(("user", "assistant")),
        Message.transcript_confidence.is_(None),
    )
    if exclude_episode is not None:
        query = query.where(Message.episode_id != exclude_episode)
    if not scope.all_raw_turns:
        if scope.identity_id is None:
            return []
        query = query.where(Message.identity_id == scope.identity_id)
    rows = list(await session.scalars(query.order_by(Message.id.desc()).limit(MAX_TURNS)))
    replaced = {row.supersedes_id for row in rows if row.supersedes_id is not None}
    return [
        RecallCandidate(
            episode_id=row.episode_id,
            source_message_id=row.id,
            kind="turn",
            speaker=_speaker(row.extra, row.role),
            text=row.text,
            at=row.created_at,
        )
        for row in reversed(rows)
        if row.id not in replaced and row.text.strip()
    ]


def _sentence_time(raw: object, fallback: datetime) -> datetime:
    try:
        day = date.fromisoformat(str(raw))
    except ValueError:
        return fallback
    return datetime(day.year, day.month, day.day, tzinfo=fallback.tzinfo)


def _sentences(records: list[SummaryRecord]) -> list[RecallCandidate]:
    out: list[RecallCandidate] = []
    for record in records:
        period = record.period_end or record.updated_at
        for position, item in enumerate(record.sentences):
            text = str(item.get("text", "")).strip()
            source = item.get("source_message_id")
            if not text or not isinstance(source, int):
                continue
            out.append(
                RecallCandidate(
                    episode_id=record.episode_id,
                    source_message_id=source,
                    kind="sentence",
                    speaker=str(item.get("speaker") or "Customer"),
                    text=text,
                    at=_sentence_time(item.get("date"), period),
                    position=position,
                )
            )
    return out


async def recall_items(
    session: AsyncSession,
    scope: RecallScope,
    *,
    message: str,
    budget: int,
    counter: TokenCounter,
    exclude_episode: str | None = None,
    summary_records: list[SummaryRecord] | None = None,
) -> tuple[SummaryItem, ...]:
    """Summary items (one per episode) of the lines most relevant to ``message``, within
    ``budget`` tokens, from the customer's episodes other than ``exclude_episode``."""
    if budget <= 0:
        return ()
    if summary_records is None:
        summary_records = await summaries.customer_summaries(
            session, scope.customer_id, exclude_episode=exclude_episode, limit=MAX_SUMMARIES
        )
    known = {
        record.id: _episode(record)
        for record in await episodes.list_episodes(session, scope.customer_id)
        if record.id != exclude_episode
    }
    candidates = [*await _turns(session, scope, exclude_episode), *_sentences(summary_records)]
    return recall(message, candidates, known, budget, counter)
