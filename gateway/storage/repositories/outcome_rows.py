"""The rows an outcome report is computed from (`gateway.reports`): the episodes started in a
range, their messages' authors and times, and the audited ownership changes of their customers'
conversations (`conversation.waiting` with its reason, `conversation.human` with the previous
owner, as `gateway.turns.handoff.change_owner` writes them), and their answered satisfaction
surveys (`gateway.csat`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.message_meta import OPERATOR_AUTHOR, decode_meta
from gateway.storage.models import AuditEntry, Conversation, Episode, Message
from gateway.storage.models_csat import CsatSurvey

CONVERSATION_SUBJECT = "conversation"
WAITING_ACTION = "conversation.waiting"
HUMAN_ACTION = "conversation.human"


@dataclass(frozen=True, slots=True)
class EpisodeStart:
    episode_id: str
    customer_id: str
    channel: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class MessageAuthor:
    episode_id: str
    author: str  # "customer", "bot" or "operator"
    at: datetime


@dataclass(frozen=True, slots=True)
class OwnershipChange:
    customer_id: str
    channel: str
    action: str  # WAITING_ACTION or HUMAN_ACTION
    reason: str
    previous_owner: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class SurveyScore:
    episode_id: str
    score: int


@dataclass(frozen=True, slots=True)
class OutcomeRows:
    episodes: tuple[EpisodeStart, ...]
    messages: tuple[MessageAuthor, ...]
    changes: tuple[OwnershipChange, ...]
    scores: tuple[SurveyScore, ...] = ()  # answered satisfaction surveys, oldest first


def _author(role: str, extra: dict[str, object] | None) -> str:
    if role == "user":
        return "customer"
    return "operator" if decode_meta(extra).author == OPERATOR_AUTHOR else "bot"


async def episode_tenants(session: AsyncSession) -> list[str]:
    """The tenants (encoded) that have episodes."""
    return list(await session.scalars(select(Episode.tenant).distinct().order_by(Episode.tenant)))


async def read_outcome_rows(
    session: AsyncSession, since: datetime, until: datetime, tenant: str | None
) -> OutcomeRows:
    """The episodes started in [since, until) (of `tenant`, an encoded tenant, when given),
    their messages, and their customers' ownership changes from `since` on."""
    chosen = [Episode.started_at >= since, Episode.started_at < until]
    if tenant is not None:
        chosen.append(Episode.tenant == tenant)
    started = await session.execute(
        select(Episode.id, Episode.customer_id, Episode.channel, Episode.started_at).where(*chosen)
    )
    episodes = tuple(EpisodeStart(e.id, e.customer_id, e.channel, e.started_at) for e in started)
    chosen_ids = select(Episode.id).where(*chosen).scalar_subquery()
    written = await session.execute(
        select(Message.episode_id, Message.role, Message.extra, Message.created_at).where(
            Message.episode_id.in_(chosen_ids)
        )
    )
    messages = tuple(
        MessageAuthor(m.episode_id, _author(m.role, m.extra), m.created_at) for m in written
    )
    chosen_customers = select(Episode.customer_id).where(*chosen).scalar_subquery()
    audited = await session.execute(
        select(
            Conversation.customer_id,
            Conversation.channel,
            AuditEntry.action,
            AuditEntry.reason,
            AuditEntry.details,
            AuditEntry.created_at,
        )
        .join(Conversation, Conversation.id == AuditEntry.subject_id)
        .where(
            AuditEntry.subject_type == CONVERSATION_SUBJECT,
            AuditEntry.action.in_([WAITING_ACTION, HUMAN_ACTION]),
            AuditEntry.created_at >= since,
            Conversation.customer_id.in_(chosen_customers),
        )
    )
    changes = tuple(
        OwnershipChange(
            row.customer_id,
            row.channel,
            row.action,
            row.reason,
            _previous_owner(row.details),
            row.created_at,
        )
        for row in audited
    )
    answered = await session.execute(
        select(CsatSurvey.episode_id, CsatSurvey.score)
        .where(CsatSurvey.episode_id.in_(chosen_ids), CsatSurvey.score.is_not(None))
        .order_by(CsatSurvey.answered_at, CsatSurvey.id)
    )
    scores = tuple(
        SurveyScore(str(row.episode_id), int(row.score))
        for row in answered
        if row.episode_id is not None and row.score is not None
    )
    return OutcomeRows(episodes, messages, changes, scores)


def _previous_owner(details: dict[str, object] | None) -> str | None:
    previous = (details or {}).get("previous_owner")
    return previous if isinstance(previous, str) else None
