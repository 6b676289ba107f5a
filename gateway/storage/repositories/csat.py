"""Satisfaction surveys on storage: a question asked, the one still waiting for an answer,
and its answer or its closing unanswered (`gateway.csat.rules` decides when)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.message_meta import AUTHOR_KEY, OPERATOR_AUTHOR, meta_text
from gateway.storage.models import Conversation, Message
from gateway.storage.models_csat import CsatSurvey
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories.conversations import conversation_record

# The most conversations one idle sweep looks at (the oldest idle first; the rest next time).
IDLE_BATCH = 200


@dataclass(frozen=True, slots=True)
class SurveyRecord:
    id: int
    conversation_id: str
    customer_id: str
    channel: str
    tenant: str  # encoded, as on the conversation row
    episode_id: str | None
    trigger: str
    person_took_part: bool
    asked_at: datetime
    answered_at: datetime | None
    closed_at: datetime | None
    score: int | None


def _record(row: CsatSurvey) -> SurveyRecord:
    return SurveyRecord(
        id=row.id,
        conversation_id=row.conversation_id,
        customer_id=row.customer_id,
        channel=row.channel,
        tenant=row.tenant,
        episode_id=row.episode_id,
        trigger=row.trigger,
        person_took_part=row.person_took_part,
        asked_at=row.asked_at,
        answered_at=row.answered_at,
        closed_at=row.closed_at,
        score=row.score,
    )


async def asked_in_episode(session: AsyncSession, conversation_id: str, episode_id: str) -> bool:
    return bool(
        await session.scalar(
            select(
                exists().where(
                    CsatSurvey.conversation_id == conversation_id,
                    CsatSurvey.episode_id == episode_id,
                )
            )
        )
    )


async def record_asked(
    session: AsyncSession,
    *,
    conversation_id: str,
    customer_id: str,
    channel: str,
    tenant: str,
    episode_id: str | None,
    trigger: str,
    person_took_part: bool,
    at: datetime,
) -> SurveyRecord:
    """Store a question asked; an earlier one still waiting closes unanswered."""
    await session.execute(
        update(CsatSurvey)
        .where(CsatSurvey.conversation_id == conversation_id, CsatSurvey.closed_at.is_(None))
        .values(closed_at=at)
    )
    row = CsatSurvey(
        conversation_id=conversation_id,
        customer_id=customer_id,
        channel=channel,
        tenant=tenant,
        episode_id=episode_id,
        trigger=trigger,
        person_took_part=person_took_part,
        asked_at=at,
    )
    session.add(row)
    await session.flush()
    return _record(row)


async def waiting_survey(session: AsyncSession, conversation_id: str) -> SurveyRecord | None:
    """The survey of the conversation still waiting for an answer, if any."""
    row = await session.scalar(
        select(CsatSurvey)
        .where(CsatSurvey.conversation_id == conversation_id, CsatSurvey.closed_at.is_(None))
        .order_by(CsatSurvey.asked_at.desc(), CsatSurvey.id.desc())
        .limit(1)
    )
    return _record(row) if row is not None else None


async def record_answer(
    session: AsyncSession, survey_id: int, score: int, at: datetime
) -> SurveyRecord | None:
    """Store the answer of a survey still waiting; None when it was not (answered or closed
    already: a second tap on a button changes nothing)."""
    result = await session.execute(
        update(CsatSurvey)
        .where(CsatSurvey.id == survey_id, CsatSurvey.closed_at.is_(None))
        .values(score=score, answered_at=at, closed_at=at)
    )
    if not getattr(result, "rowcount", 0):
        return None
    row = await session.get(CsatSurvey, survey_id, populate_existing=True)
    return _record(row) if row is not None else None


async def close_unanswered(session: AsyncSession, survey_id: int, at: datetime) -> None:
    await session.execute(
        update(CsatSurvey)
        .where(CsatSurvey.id == survey_id, CsatSurvey.closed_at.is_(None))
        .values(closed_at=at)
    )


async def last_asked_at(session: AsyncSession, conversation_id: str) -> datetime | None:
    """When the conversation's previous survey was asked (a person "took part" since then)."""
    return await session.scalar(
        select(CsatSurvey.asked_at)
        .where(CsatSurvey.conversation_id == conversation_id)
        .order_by(CsatSurvey.asked_at.desc())
        .limit(1)
    )


async def idle_with_the_bot(
    session: AsyncSession, *, since: datetime, before: datetime
) -> list[ConversationRecord]:
    """Conversations the bot answers whose last message falls between `since` and `before`
    (idle since then), oldest first, at most `IDLE_BATCH`."""
    rows = await session.scalars(
        select(Conversation)
        .where(
            Conversation.owner == "bot",
            Conversation.last_message_at >= since,
            Conversation.last_message_at < before,
        )
        .order_by(Conversation.last_message_at)
        .limit(IDLE_BATCH)
    )
    return [conversation_record(row) for row in rows]


async def operator_wrote(session: AsyncSession, episode_id: str, since: datetime | None) -> bool:
    """Whether an operator wrote in the episode (after `since`, when given)."""
    conditions = [
        Message.episode_id == episode_id,
        meta_text(Message.extra, AUTHOR_KEY) == OPERATOR_AUTHOR,
    ]
    if since is not None:
        conditions.append(Message.created_at > since)
    return bool(await session.scalar(select(exists().where(*conditions))))
