"""An outcome report read from storage: the rows of `repositories.outcome_rows` turned into the
typed inputs of `gateway.reports.figures`, and the figures built.

Handoffs are the ownership changes `gateway.turns.handoff.change_owner` audits:
`conversation.waiting` with the reason the answer step gave (the customer's phrase, repeated
model failures, the model's marker), and `conversation.human` (an operator took it: a take-over
when it came from the bot, the end of the wait when it came from waiting).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.reports.figures import (
    Author,
    ChangeKind,
    EpisodeRow,
    HandoffReason,
    MessageRow,
    OwnerChangeRow,
    Report,
    ScoreRow,
    build_report,
)
from gateway.reports.reasons import handoff_reason
from gateway.storage.repositories import outcome_rows
from gateway.storage.repositories.outcome_rows import WAITING_ACTION, OwnershipChange


@dataclass(frozen=True, slots=True)
class ReportQuery:
    since: date
    until: date  # included
    tenant: str | None = None  # an encoded tenant; None: every tenant


def _start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def owner_change(change: OwnershipChange) -> OwnerChangeRow | None:
    """A handoff (with its reason), the take that ends a wait, or None (a hand-back...)."""
    at, customer, channel = change.at, change.customer_id, change.channel
    if change.action == WAITING_ACTION:
        why = handoff_reason(change.reason)
        return OwnerChangeRow(customer, channel, at, ChangeKind.HANDOFF, why)
    if change.previous_owner == "bot":
        return OwnerChangeRow(customer, channel, at, ChangeKind.HANDOFF, HandoffReason.TAKEOVER)
    if change.previous_owner == "waiting":
        return OwnerChangeRow(customer, channel, at, ChangeKind.TAKE)
    return None


async def tenants(session: AsyncSession) -> list[str]:
    """The tenants (encoded) that have conversations, for the report's filter."""
    return await outcome_rows.episode_tenants(session)


async def read_report(session: AsyncSession, query: ReportQuery) -> Report:
    rows = await outcome_rows.read_outcome_rows(
        session, _start(query.since), _start(query.until + timedelta(days=1)), query.tenant
    )
    episodes = [
        EpisodeRow(e.episode_id, e.customer_id, e.channel, e.started_at) for e in rows.episodes
    ]
    messages = [MessageRow(m.episode_id, Author(m.author), m.at) for m in rows.messages]
    changes = [c for c in (owner_change(change) for change in rows.changes) if c is not None]
    scores = [ScoreRow(s.episode_id, s.score) for s in rows.scores]
    return build_report(query.since, query.until, episodes, messages, changes, scores)
