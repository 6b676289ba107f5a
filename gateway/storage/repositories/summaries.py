"""Episode summaries `{summary, last_message_id}` and compaction traces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import require_customer
from gateway.storage.models import CompactionTrace, Episode, EpisodeSummary, Message
from gateway.storage.records import CompactionTraceRecord, SummaryRecord
from gateway.storage.repositories.tables import EPISODES, SUMMARIES, AnyRow
from gateway.storage.updates import NewCompactionTrace

_OF_EPISODE = select(SUMMARIES).where(
    SUMMARIES.c.customer_id == bindparam("customer_id"),
    SUMMARIES.c.episode_id == bindparam("episode_id"),
)
_OF_EPISODE_ONLY = select(SUMMARIES).where(SUMMARIES.c.episode_id == bindparam("episode_id"))
_POINTER = select(EpisodeSummary.last_message_id).where(
    EpisodeSummary.episode_id == bindparam("episode_id")
)


# A customer's summaries with their episodes' periods, most recent episode first, as plain rows
# (every answer reads them).
_WITH_PERIOD_BASE = (
    select(
        SUMMARIES.c.episode_id,
        SUMMARIES.c.customer_id,
        SUMMARIES.c.summary,
        SUMMARIES.c.last_message_id,
        SUMMARIES.c.origin_channel,
        SUMMARIES.c.transcript_confidence,
        SUMMARIES.c.token_count,
        SUMMARIES.c.updated_at,
        SUMMARIES.c.sentences,
        EPISODES.c.started_at,
        EPISODES.c.ended_at,
        EPISODES.c.last_message_at,
    )
    .join(EPISODES, EPISODES.c.id == SUMMARIES.c.episode_id)
    .where(SUMMARIES.c.customer_id == bindparam("customer_id"))
)
_RECENT_FIRST = (EPISODES.c.last_message_at.desc(), EPISODES.c.id)
_WITH_PERIOD = _WITH_PERIOD_BASE.order_by(*_RECENT_FIRST).limit(bindparam("limit"))
_WITH_PERIOD_EXCEPT = (
    _WITH_PERIOD_BASE.where(SUMMARIES.c.episode_id != bindparam("exclude"))
    .order_by(*_RECENT_FIRST)
    .limit(bindparam("limit"))
)


def summary_record(row: EpisodeSummary | AnyRow, episode: Episode | None = None) -> SummaryRecord:
    """From an ORM row, or a Core row of the summaries table (the same attribute names)."""
    if episode is None:
        return _summary(row, None, None)
    return _summary(row, episode.started_at, episode.ended_at or episode.last_message_at)


def _period_summary(row: AnyRow) -> SummaryRecord:
    """From a `_WITH_PERIOD` row: the summary's columns and its episode's period."""
    return _summary(row, row.started_at, row.ended_at or row.last_message_at)


def _summary(
    row: EpisodeSummary | AnyRow, start: datetime | None, end: datetime | None
) -> SummaryRecord:
    return SummaryRecord(
        period_start=start,
        period_end=end,
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
    params = {"customer_id": require_customer(customer_id), "episode_id": episode_id}
    row = (await session.execute(_OF_EPISODE, params)).first()
    return summary_record(row) if row else None


async def customer_summaries(
    session: AsyncSession, customer_id: str, *, exclude_episode: str | None = None, limit: int = 200
) -> list[SummaryRecord]:
    """Summaries of the customer's episodes on any channel, with each episode's period,
    most recent episode first."""
    params: dict[str, object] = {"customer_id": require_customer(customer_id), "limit": limit}
    query = _WITH_PERIOD
    if exclude_episode is not None:
        query, params["exclude"] = _WITH_PERIOD_EXCEPT, exclude_episode
    rows = await session.execute(query, params)
    return [_period_summary(row) for row in rows]


async def drop_episode_summary(session: AsyncSession, episode_id: str) -> None:
    """Delete the episode's summary (it described what the episode no longer is)."""
    await session.execute(delete(EpisodeSummary).where(EpisodeSummary.episode_id == episode_id))


async def drop_customer_summaries(session: AsyncSession, customer_id: str) -> None:
    """Delete every summary of the customer (a rebuild computes them again)."""
    await session.execute(
        delete(EpisodeSummary).where(EpisodeSummary.customer_id == require_customer(customer_id))
    )


async def owed_final_summary(
    session: AsyncSession, *, since: datetime, limit: int
) -> list[tuple[str, str]]:
    """(customer id, episode id) of episodes closed since `since` with spoken (user or
    assistant) messages past their summary pointer, oldest closure first."""
    pointer = func.coalesce(EpisodeSummary.last_message_id, 0)
    unsummarized = exists().where(
        and_(
            Message.episode_id == Episode.id,
            Message.role.in_(("user", "assistant")),
            Message.id > pointer,
        )
    )
    rows = await session.execute(
        select(Episode.customer_id, Episode.id)
        .outerjoin(EpisodeSummary, EpisodeSummary.episode_id == Episode.id)
        .where(Episode.status == "closed", Episode.ended_at >= since, unsummarized)
        .order_by(Episode.ended_at)
        .limit(limit)
    )
    return [(customer_id, episode_id) for customer_id, episode_id in rows.all()]


async def summary_of_locked_episode(session: AsyncSession, episode_id: str) -> SummaryRecord | None:
    """The summary of an episode the caller read (and locked) in this transaction, found by
    the episode alone: the episode row is the scope (compaction works per episode)."""
    row = (await session.execute(_OF_EPISODE_ONLY, {"episode_id": episode_id})).first()
    return summary_record(row) if row else None


async def summary_pointer(session: AsyncSession, episode_id: str) -> int | None:
    """The last message the episode's summary covers; None before its first summary."""
    return await session.scalar(_POINTER, {"episode_id": episode_id})


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


async def add_trace(session: AsyncSession, trace: NewCompactionTrace) -> CompactionTraceRecord:
    row = CompactionTrace(
        customer_id=require_customer(trace.customer_id),
        compactor=trace.compactor,
        episode_id=trace.episode_id,
        model=trace.model,
        error=trace.error,
        facts_before=dict(trace.facts_before),
        facts_after=dict(trace.facts_after),
        summary_before=trace.summary_before,
        summary_after=trace.summary_after,
        tokens_in=trace.tokens_in,
        tokens_out=trace.tokens_out,
        duration_ms=trace.duration_ms,
    )
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
