"""Outcome figures of conversations, per day and channel. Pure: typed rows in, typed figures out.

A conversation here is an episode (one customer on one channel, until it closes by idle time),
counted on the day (UTC) it started. A person took part when an operator wrote in it or it was
handed to a person; the bot resolved it alone when it replied and no person took part. A
handoff belongs to the episode of its customer and channel that was open when it happened.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum

ALL_CHANNELS = "all"


class Author(StrEnum):
    CUSTOMER = "customer"
    BOT = "bot"
    OPERATOR = "operator"


class HandoffReason(StrEnum):
    PHRASE = "phrase"  # the customer's words asked for a person
    FAILURES = "failures"  # the model failed repeatedly
    MODEL_MARKER = "model_marker"  # the model answered with the handoff marker
    TAKEOVER = "operator_takeover"  # an operator took the conversation from the bot
    OTHER = "other"


class ChangeKind(StrEnum):
    HANDOFF = "handoff"  # the conversation left the bot
    TAKE = "take"  # an operator took a conversation that waited for a person


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    episode_id: str
    customer_id: str
    channel: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class MessageRow:
    episode_id: str
    author: Author
    at: datetime


@dataclass(frozen=True, slots=True)
class OwnerChangeRow:
    customer_id: str
    channel: str
    at: datetime
    kind: ChangeKind
    reason: HandoffReason | None = None  # for a handoff


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """An answered satisfaction survey of an episode (`gateway.csat`): its score, 1-5."""

    episode_id: str
    score: int


@dataclass(frozen=True, slots=True)
class Spread:
    """p50 and p90 (nearest rank) of durations in seconds; None when nothing was measured."""

    p50: float | None
    p90: float | None
    count: int


@dataclass(frozen=True, slots=True)
class Figures:
    day: date | None  # None: the whole range
    channel: str  # or `ALL_CHANNELS`
    conversations: int
    customer_messages: int
    bot_messages: int
    operator_messages: int
    resolved_by_bot: int
    handed_over: tuple[tuple[HandoffReason, int], ...]  # every reason, in enum order
    first_reply_bot: Spread
    first_reply_human: Spread
    waiting_for_person: Spread
    # Satisfaction answers of the conversations (the latest answer of each) and their mean.
    csat_answers: int
    csat_average: float | None

    @property
    def handed_over_total(self) -> int:
        return sum(count for _, count in self.handed_over)

    def handed(self, reason: HandoffReason) -> int:
        return dict(self.handed_over)[reason]


@dataclass(frozen=True, slots=True)
class Report:
    days: tuple[date, ...]
    channels: tuple[str, ...]
    by_day_channel: tuple[Figures, ...]  # only the (day, channel) pairs with conversations
    by_day: tuple[Figures, ...]  # every day of the range, all channels
    total: Figures


Counter_ = tuple[int, int, int]  # customer, bot, operator messages


@dataclass(frozen=True, slots=True)
class _Outcome:
    """One episode's outcome."""

    episode: EpisodeRow
    messages: Counter_
    person_took_part: bool
    resolved_by_bot: bool
    handoff_reason: HandoffReason | None
    first_reply_bot: float | None
    first_reply_human: float | None
    waiting: float | None
    csat_score: int | None


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least p% of values at or below."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def spread(values: Sequence[float]) -> Spread:
    return Spread(percentile(values, 50), percentile(values, 90), len(values))


def _seconds(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds()


def _changes_of_episodes(
    episodes: Sequence[EpisodeRow], changes: Iterable[OwnerChangeRow]
) -> dict[str, list[OwnerChangeRow]]:
    """Each change given to the episode of its customer and channel open at the time (the
    latest one started at or before it)."""
    starts: dict[tuple[str, str], list[EpisodeRow]] = defaultdict(list)
    for episode in episodes:
        starts[(episode.customer_id, episode.channel)].append(episode)
    for found in starts.values():
        found.sort(key=lambda e: e.started_at)
    owned: dict[str, list[OwnerChangeRow]] = defaultdict(list)
    for change in sorted(changes, key=lambda c: c.at):
        candidates = [
            e
            for e in starts.get((change.customer_id, change.channel), [])
            if e.started_at <= change.at
        ]
        if candidates:
            owned[candidates[-1].episode_id].append(change)
    return owned


def _outcome(
    episode: EpisodeRow,
    messages: Sequence[MessageRow],
    changes: Sequence[OwnerChangeRow],
    csat_score: int | None = None,
) -> _Outcome:
    ordered = sorted(messages, key=lambda m: m.at)
    count = {author: sum(1 for m in ordered if m.author is author) for author in Author}
    handoffs = [c for c in changes if c.kind is ChangeKind.HANDOFF]
    handoff = handoffs[0] if handoffs else None
    first_customer = next((m for m in ordered if m.author is Author.CUSTOMER), None)
    first_reply_bot = None
    if first_customer is not None:
        bot = next(
            (m for m in ordered if m.author is Author.BOT and m.at >= first_customer.at), None
        )
        if bot is not None and (handoff is None or bot.at <= handoff.at):
            first_reply_bot = _seconds(bot.at, first_customer.at)
    first_reply_human = None
    waiting = None
    if handoff is not None:
        operator = next(
            (m for m in ordered if m.author is Author.OPERATOR and m.at >= handoff.at), None
        )
        if operator is not None:
            first_reply_human = _seconds(operator.at, handoff.at)
        if handoff.reason is not HandoffReason.TAKEOVER:
            take = next(
                (c for c in changes if c.kind is ChangeKind.TAKE and c.at >= handoff.at), None
            )
            if take is not None:
                waiting = _seconds(take.at, handoff.at)
    person = handoff is not None or count[Author.OPERATOR] > 0
    return _Outcome(
        episode=episode,
        messages=(count[Author.CUSTOMER], count[Author.BOT], count[Author.OPERATOR]),
        person_took_part=person,
        resolved_by_bot=not person and count[Author.BOT] > 0,
        handoff_reason=handoff.reason if handoff is not None else None,
        first_reply_bot=first_reply_bot,
        first_reply_human=first_reply_human,
        waiting=waiting,
        csat_score=csat_score,
    )


def _figures(day: date | None, channel: str, outcomes: Sequence[_Outcome]) -> Figures:
    def measured(pick: Callable[[_Outcome], float | None]) -> Spread:
        return spread([v for v in (pick(o) for o in outcomes) if v is not None])

    scores = [o.csat_score for o in outcomes if o.csat_score is not None]

    return Figures(
        day=day,
        channel=channel,
        conversations=len(outcomes),
        customer_messages=sum(o.messages[0] for o in outcomes),
        bot_messages=sum(o.messages[1] for o in outcomes),
        operator_messages=sum(o.messages[2] for o in outcomes),
        resolved_by_bot=sum(1 for o in outcomes if o.resolved_by_bot),
        handed_over=tuple(
            (reason, sum(1 for o in outcomes if o.handoff_reason is reason))
            for reason in HandoffReason
        ),
        first_reply_bot=measured(lambda o: o.first_reply_bot),
        first_reply_human=measured(lambda o: o.first_reply_human),
        waiting_for_person=measured(lambda o: o.waiting),
        csat_answers=len(scores),
        csat_average=sum(scores) / len(scores) if scores else None,
    )


def build_report(
    since: date,
    until: date,
    episodes: Sequence[EpisodeRow],
    messages: Iterable[MessageRow],
    changes: Iterable[OwnerChangeRow],
    scores: Iterable[ScoreRow] = (),
) -> Report:
    """The figures of the episodes started from `since` to `until` (both included, UTC days);
    `scores`: answered satisfaction surveys, the last of each episode counting."""
    kept = [e for e in episodes if since <= e.started_at.date() <= until]
    by_episode: dict[str, list[MessageRow]] = defaultdict(list)
    for message in messages:
        by_episode[message.episode_id].append(message)
    owned = _changes_of_episodes(kept, changes)
    score_of = {row.episode_id: row.score for row in scores}
    outcomes = [
        _outcome(e, by_episode[e.episode_id], owned[e.episode_id], score_of.get(e.episode_id))
        for e in kept
    ]
    days = tuple(since + timedelta(days=n) for n in range((until - since).days + 1))
    channels = tuple(sorted({e.channel for e in kept}))
    grouped: dict[tuple[date, str], list[_Outcome]] = defaultdict(list)
    daily: dict[date, list[_Outcome]] = defaultdict(list)
    for outcome in outcomes:
        day = outcome.episode.started_at.date()
        grouped[(day, outcome.episode.channel)].append(outcome)
        daily[day].append(outcome)
    return Report(
        days=days,
        channels=channels,
        by_day_channel=tuple(
            _figures(day, channel, grouped[(day, channel)])
            for day in days
            for channel in channels
            if grouped.get((day, channel))
        ),
        by_day=tuple(_figures(day, ALL_CHANNELS, daily.get(day, [])) for day in days),
        total=_figures(None, ALL_CHANNELS, outcomes),
    )
