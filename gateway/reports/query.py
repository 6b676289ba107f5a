"""The rows an outcome report is computed from (`gateway.reports.figures`), read from storage.

Handoffs are the conversation ownership changes that `gateway.turns.handoff.change_owner`
audits: `conversation.waiting` with the reason the answer step gave (the customer's phrase,
repeated model failures, the model's marker), and `conversation.human` (an operator took it:
a take-over when it came from the bot, the end of the wait when it came from waiting).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.reports.figures import (
    Author,
    ChangeKind,
    EpisodeRow,
    HandoffReason,
    MessageRow,
    OwnerChangeRow,
    Report,
    build_report,
)
from gateway.reports.reasons import handoff_reason
from gateway.storage.message_meta import OPERATOR_AUTHOR, decode_meta
from gateway.storage.models import AuditEntry, Conversation, Episode, Message
from gateway.turns.handoff import AUDIT_SUBJECT

WAITING_ACTION = "conversation.waiting"
HUMAN_ACTION = "conversation.human"


@dataclass(frozen=True, slots=True)
class ReportQuery:
    since: date
    until: date  # included
    tenant: str | None = None  # an encoded tenant; None: every tenant


def _start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _author(role: str, extra: dict[str, object] | None) -> Author:
    if role == "user":
        return Author.CUSTOMER
    return Author.OPERATOR if decode_meta(extra).author == OPERATOR_AUTHOR else Author.BOT


def _change(
    customer_id: str,
    channel: str,
    action: str,
    reason: str,
    details: dict[str, object],
    at: datetime,
) -> list[OwnerChangeRow]:
    if action == WAITING_ACTION:
        why = handoff_reason(reason)
        return [OwnerChangeRow(customer_id, channel, at, ChangeKind.HANDOFF, why)]
    if details.get("previous_owner") == "bot":
        return [
            OwnerChangeRow(customer_id, channel, at, ChangeKind.HANDOFF, HandoffReason.TAKEOVER)
        ]
    if details.get("previous_owner") == "waiting":
        return [OwnerChangeRow(customer_id, channel, at, ChangeKind.TAKE)]
    return []


async def tenants(session: AsyncSession) -> list[str]:
    """The tenants (encoded) that have conversations, for the report's filter."""
    found = await session.scalars(select(Episode.tenant).distinct().order_by(Episode.tenant))
    return list(found)


async def read_report(session: AsyncSession, query: ReportQuery) -> Report:
    since, until = _start(query.since), _start(query.until + timedelta(days=1))
    chosen = [Episode.started_at >= since, Episode.started_at < until]
    if query.tenant is not None:
        chosen.append(Episode.tenant == query.tenant)
    episode_rows = (
        await session.execute(
            select(Episode.id, Episode.customer_id, Episode.channel, Episode.started_at).where(
                *chosen
            )
        )
    ).all()
    episodes = [EpisodeRow(e.id, e.customer_id, e.channel, e.started_at) for e in episode_rows]
    chosen_ids = select(Episode.id).where(*chosen).scalar_subquery()
    message_rows = await session.execute(
        select(Message.episode_id, Message.role, Message.extra, Message.created_at).where(
            Message.episode_id.in_(chosen_ids)
        )
    )
    messages = [
        MessageRow(m.episode_id, _author(m.role, m.extra), m.created_at) for m in message_rows
    ]
    chosen_customers = select(Episode.customer_id).where(*chosen).scalar_subquery()
    change_rows = await session.execute(
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
            AuditEntry.subject_type == AUDIT_SUBJECT,
            AuditEntry.action.in_([WAITING_ACTION, HUMAN_ACTION]),
            AuditEntry.created_at >= since,
            Conversation.customer_id.in_(chosen_customers),
        )
    )
    changes = [
        change
        for row in change_rows
        for change in _change(
            row.customer_id, row.channel, row.action, row.reason, row.details or {}, row.created_at
        )
    ]
    return build_report(query.since, query.until, episodes, messages, changes)
