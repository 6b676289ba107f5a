"""Episode summaries `{summary, last_message_id}` and compaction traces."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import require_customer
from gateway.storage.models import CompactionTrace, Episode, EpisodeSummary
from gateway.storage.records import CompactionTraceRecord, SummaryRecord

_OF_EPISODE = select(EpisodeSummary).where(
    EpisodeSummary.customer_id == bindparam("customer_id"),
    EpisodeSummary.episode_id == bindparam("episode_id"),
)


def summary_record(row: EpisodeSummary, episode: Episode | None = None) -> SummaryRecord:
    return SummaryRecord(
        period_start=episode.started_at if episode else None,
        period_end=(episode.ended_at or episode.last_message_at) if episode else None,
        sentences=tuple(item for item in (row.sentences or []) if isinstance(item, dict)),
        episode_id=row.episode_id,
        customer_id=row.customer_id,
        summary=row.summary,
        last_message_id=row.last_message_id,
        origin_channel=row.origin_channel,
        transcript_confidence=row.transcript_confidence,
        token_count=row.token_count,
        updated_at=row.updated_at,
    )


async def save_summary(
    session: AsyncSession,
    *,
    customer_id: str,
    episode_id: str,
    summary: str,
    last_message_id: int,
    origin_channel: str,
    token_count: int,
    transcript_confidence: float | None = None,
    sentences: list[dict[str, Any]] | None = None,
) -> SummaryRecord:
    """Write the episode's summary; the pointer only moves forward."""
    row = await session.scalar(
        select(EpisodeSummary).where(
            EpisodeSummary.customer_id == require_customer(customer_id),
            EpisodeSummary.episode_id == episode_id,
        )
    )
    if row is None:
        row = EpisodeSummary(
            customer_id=customer_id,
            episode_id=episode_id,
            summary=summary,
            last_message_id=last_message_id,
            origin_channel=origin_channel,
            token_count=token_count,
            transcript_confidence=transcript_confidence,
            sentences=sentences,
        )
        session.add(row)
    elif last_message_id >= row.last_message_id:
        row.summary = summary
        row.last_message_id = last_message_id
        row.token_count = token_count
        row.transcript_confidence = transcript_confidence
        row.sentences = sentences
    await session.flush()
    return summary_record(row)


async def episode_summary(
    session: AsyncSession, customer_id: str, episode_id: str
) -> SummaryRecord | None:
    row = await session.scalar(
        _OF_EPISODE, {"customer_id": require_customer(customer_id), "episode_id": episode_id}
    )
    return summary_record(row) if row else None


async def customer_summaries(
    session: AsyncSession, customer_id: str, *, exclude_episode: str | None = None, limit: int = 200
) -> list[SummaryRecord]:
    """Summaries of the customer's episodes on any channel, with each episode's period,
    most recent episode first."""
    query = (
        select(EpisodeSummary, Episode)
        .join(Episode, Episode.id == EpisodeSummary.episode_id)
        .where(EpisodeSummary.customer_id == require_customer(customer_id))
    )
    if exclude_episode is not None:
        query = query.where(EpisodeSummary.episode_id != exclude_episode)
    rows = await session.execute(
        query.order_by(Episode.last_message_at.desc(), Episode.id).limit(limit)
    )
    return [summary_record(summary, episode) for summary, episode in rows]


def trace_record(row: CompactionTrace) -> CompactionTraceRecord:
    return CompactionTraceRecord(
        id=row.id,
        customer_id=row.customer_id,
        episode_id=row.episode_id,
        compactor=row.compactor,
        model=row.model,
        facts_before=dict(row.facts_before or {}),
        facts_after=dict(row.facts_after or {}),
        summary_before=row.summary_before,
        summary_after=row.summary_after,
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=row.created_at,
    )


async def add_trace(
    session: AsyncSession, *, customer_id: str, compactor: str, **fields: Any
) -> CompactionTraceRecord:
    row = CompactionTrace(customer_id=require_customer(customer_id), compactor=compactor, **fields)
    session.add(row)
    await session.flush()
    return trace_record(row)


async def list_traces(session: AsyncSession, customer_id: str) -> list[CompactionTraceRecord]:
    rows = await session.scalars(
        select(CompactionTrace)
        .where(CompactionTrace.customer_id == require_customer(customer_id))
        .order_by(CompactionTrace.id)
    )
    return [trace_record(row) for row in rows]
