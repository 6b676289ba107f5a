"""Recall from storage: the customer's past material most relevant to the current message.

What may be retrieved is decided before anything is scored:

* summary sentences (`EpisodeSummary.sentences`) of the customer's other episodes, on any channel
  — summaries already mask identifiers;
* raw turns of the customer's other episodes on typed channels (WhatsApp, web chat, Telegram),
  never a transcribed voice note (a message with a transcript confidence);
* raw turns of the customer's calls: the speech of each call's current transcript version,
  masked for identifiers (e-mails, CPF/CNPJ, phones, UUIDs, CEPs) and tagged with its
  transcript confidence (`context.recall_calls`).

Raw turns are offered only to an identity allowed every fact scope (`RAW_TURN_SCOPES`); any
other identity gets raw turns only of its own identity.

The candidates are read from storage (the columns recall needs, at most `MAX_TURNS` turns and
`MAX_SUMMARIES` summaries) and scored by `context.recall`; a `RecallCache` keeps them per
customer while the customer's other episodes are unchanged. A cache given a `RecallSimilarity`
(the cosine of the message with each candidate) makes recall hybrid (`context.recall_fusion`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Final, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from context import SummaryItem, TokenCounter
from context.compaction.types import FACT_SCOPES
from context.recall import RecallCandidate, RecallEpisode, recall
from context.recall_calls import call_turn_candidate
from context.recall_index import RecallIndex, build_index
from gateway.storage.records import EpisodeRecord, SummaryRecord
from gateway.storage.repositories import call_turns, episodes, messages, summaries

__all__ = [
    "MAX_CALL_TURNS",
    "MAX_SUMMARIES",
    "MAX_TURNS",
    "RAW_TURN_SCOPES",
    "RecallCache",
    "RecallScope",
    "RecallSimilarity",
    "recall_items",
]

TRANSCRIPT_CHANNELS: Final = frozenset({"phone"})
# The newest raw turns and summaries considered per request.
MAX_TURNS: Final = 5_000
MAX_CALL_TURNS: Final = 5_000
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
    if not scope.all_raw_turns and scope.identity_id is None:
        return []
    lines = await messages.typed_turns(
        session,
        scope.customer_id,
        skip_channels=TRANSCRIPT_CHANNELS,
        exclude_episode=exclude_episode,
        identity_id=None if scope.all_raw_turns else scope.identity_id,
        limit=MAX_TURNS,
    )
    replaced = {line.supersedes_id for line in lines if line.supersedes_id is not None}
    return [
        RecallCandidate(
            episode_id=line.episode_id,
            source_message_id=line.id,
            kind="turn",
            speaker=line.speaker or ("Customer" if line.role == "user" else "Assistant"),
            text=line.text,
            at=line.created_at,
        )
        for line in reversed(lines)
        if line.id not in replaced and line.text.strip()
    ]


async def _call_turns(
    session: AsyncSession,
    scope: RecallScope,
    exclude_episode: str | None,
    versions: dict[str, int],
) -> list[RecallCandidate]:
    """The raw turns of the customer's calls (``versions``: each call's current transcript
    version), masked."""
    if not versions or (not scope.all_raw_turns and scope.identity_id is None):
        return []
    lines = await call_turns.call_turns(
        session,
        scope.customer_id,
        channels=TRANSCRIPT_CHANNELS,
        exclude_episode=exclude_episode,
        identity_id=None if scope.all_raw_turns else scope.identity_id,
        limit=MAX_CALL_TURNS,
    )
    replaced = {line.supersedes_id for line in lines if line.supersedes_id is not None}
    return [
        call_turn_candidate(
            episode_id=line.episode_id,
            source_message_id=line.id,
            speaker=line.meta.speaker or ("Customer" if line.role == "user" else "Assistant"),
            text=line.text,
            at=line.created_at,
            confidence=line.transcript_confidence,
        )
        for line in reversed(lines)
        if line.id not in replaced
        and line.text.strip()
        and line.episode_id in versions
        and line.current_in(versions[line.episode_id])
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


class RecallSimilarity(Protocol):
    """The cosine of a message's vector with each candidate's (None for a candidate without a
    vector yet): what hybrid recall fuses with the lexical ranking (`context.recall_fusion`)."""

    async def __call__(
        self,
        message: str,
        candidates: Sequence[RecallCandidate],
        *,
        session: AsyncSession,
        customer_id: str,
    ) -> Sequence[float | None]: ...


class RecallCache:
    """The recall index of recently served customers, reused while the customer's other
    episodes are unchanged (their last message time, transcript version and summary pointer
    form the fingerprint, read on every request anyway). Consecutive turns of a conversation
    then skip the raw-turn read; any new message elsewhere, summary, merge or split misses.
    With a ``similarity``, recall through the cache is hybrid."""

    def __init__(self, capacity: int = 256, similarity: RecallSimilarity | None = None) -> None:
        self._capacity = capacity
        self.similarity = similarity
        self._entries: OrderedDict[tuple[object, ...], tuple[object, RecallIndex]] = OrderedDict()

    def get(self, key: tuple[object, ...], fingerprint: object) -> RecallIndex | None:
        entry = self._entries.get(key)
        if entry is None or entry[0] != fingerprint:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def holds(self, customer_id: str) -> bool:
        """Whether any entry of the customer is kept."""
        return any(key and key[0] == customer_id for key in self._entries)

    def forget(self, customer_ids: Collection[str]) -> int:
        """Drop every entry of these customers (erased, or some of their messages were);
        returns how many entries went."""
        gone = [key for key in self._entries if key and key[0] in customer_ids]
        for key in gone:
            del self._entries[key]
        return len(gone)

    def put(self, key: tuple[object, ...], fingerprint: object, index: RecallIndex) -> None:
        self._entries[key] = (fingerprint, index)
        self._entries.move_to_end(key)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)


async def recall_items(
    session: AsyncSession,
    scope: RecallScope,
    *,
    message: str,
    budget: int,
    counter: TokenCounter,
    exclude_episode: str | None = None,
    summary_records: list[SummaryRecord] | None = None,
    cache: RecallCache | None = None,
    extra: int = 0,
    episode_records: Sequence[EpisodeRecord] | None = None,
) -> tuple[SummaryItem, ...]:
    """Summary items (one per episode) of the lines most relevant to ``message``, within
    ``budget`` tokens (plus ``extra`` for the most relevant lines, see `context.recall.pack`),
    from the customer's episodes other than ``exclude_episode``. ``summary_records`` and
    ``episode_records`` (all the customer's episodes) are read here unless the caller already
    read them in this session."""
    if budget + extra <= 0:
        return ()
    if summary_records is None:
        summary_records = await summaries.customer_summaries(
            session, scope.customer_id, exclude_episode=exclude_episode, limit=MAX_SUMMARIES
        )
    if episode_records is None:
        episode_records = await episodes.list_episodes(session, scope.customer_id)
    others = [record for record in episode_records if record.id != exclude_episode]
    if not others and not summary_records:
        return ()  # a customer's first episode: nothing to recall, nothing to read
    known = {record.id: _episode(record) for record in others}
    key = (
        scope.customer_id,
        exclude_episode,
        None if scope.all_raw_turns else scope.identity_id,
    )
    fingerprint = (
        tuple((r.id, r.last_message_at, r.version) for r in others),
        tuple((r.episode_id, r.last_message_id, r.updated_at) for r in summary_records),
    )
    index = cache.get(key, fingerprint) if cache is not None else None
    if index is None:
        calls = {r.id: r.version for r in others if r.channel in TRANSCRIPT_CHANNELS}
        candidates = [
            *await _turns(session, scope, exclude_episode),
            *await _call_turns(session, scope, exclude_episode, calls),
            *_sentences(summary_records),
        ]
        if cache is None:
            return recall(message, candidates, known, budget, counter, extra=extra)
        index = build_index(candidates)
        cache.put(key, fingerprint, index)
    similarities = None
    if cache is not None and cache.similarity is not None:
        similarities = await cache.similarity(
            message, index.candidates, session=session, customer_id=scope.customer_id
        )
    return recall(
        message,
        index.candidates,
        known,
        budget,
        counter,
        index=index,
        extra=extra,
        similarities=similarities,
    )
