"""What a window reads of a customer from storage, as context types: every episode (the current
one among them) and the recent summaries (two statements), the current episode's turns after
its summary (one), the scope-allowed facts (one, in `facts.window_facts`). Stored token counts
are reused; nothing stored is re-tokenized."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from context import FactItem, TokenCounter, Turn
from context.render import human_agent_tag
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import EpisodeRecord, FactRecord, SummaryRecord, WindowLine
from gateway.storage.repositories import episodes, messages, summaries

# The newest turns loaded for the current episode; the episode slice holds far fewer.
RECENT_TURNS_LIMIT = 400
# The other episodes' summaries a window considers (most recent first).
SUMMARIES_LIMIT = 200


def window_turn(message: WindowLine, counter: TokenCounter) -> Turn | None:
    if message.role not in ("user", "assistant"):
        return None
    text, tokens = message.text, message.token_count
    if message.role == "assistant" and not text and message.human_agent is None:
        return None  # a reply of attachments only (`context.reply_attachments`): no words
    if message.human_agent is not None:
        # An operator's message: tagged as a person's (only the tag is counted here; the text
        # keeps its count from ingest).
        tag = human_agent_tag(message.human_agent)
        text, tokens = tag + text, tokens + counter.count(tag)
    return Turn(
        id=str(message.id),
        role="user" if message.role == "user" else "assistant",
        text=text,
        tokens=tokens,
        channel=message.channel,
        created_at=message.created_at,
        confidence=message.transcript_confidence,
    )


def fact_item(record: FactRecord) -> FactItem:
    return FactItem(
        id=str(record.id),
        key=record.key,
        value=record.value,
        scope=record.scope,
        source_channel=record.source_channel,
        source_message_id=str(record.source_message_id),
        learned_at=record.created_at,
        tags=record.tags,
        confidence=record.confidence,
        confirmed=record.confirmed,
        pinned=record.pinned,
        is_rule="rule" in record.tags,
    )


@dataclass(frozen=True, slots=True)
class CustomerHistory:
    """What a window reads of the customer besides the current episode's turns, in two
    statements: every episode (the current one, recall's episodes, the full history's cost) and
    the summaries of the most recent episodes (the current one's among them, when it has one)."""

    episodes: list[EpisodeRecord]
    summaries: list[SummaryRecord]  # most recent episode first, `SUMMARIES_LIMIT` + 1 at most

    def episode(self, episode_id: str) -> EpisodeRecord:
        for record in self.episodes:
            if record.id == episode_id:
                return record
        raise RecordNotFound(f"episode {episode_id} not found")

    def latest_open(self, channel: str, identity_id: str | None) -> EpisodeRecord | None:
        """`episodes.latest_open_episode` read from the episodes already loaded (one statement
        fewer per window): the open episode of the channel (and identity) with the latest
        message."""
        return max(
            (
                record
                for record in self.episodes
                if record.status == "open"
                and record.channel == channel
                and (identity_id is None or record.identity_id == identity_id)
            ),
            key=lambda record: record.last_message_at,
            default=None,
        )

    def other_summaries(self, current: str | None) -> list[SummaryRecord]:
        """The summaries slice's candidates: other episodes', most recent first."""
        return [r for r in self.summaries if r.episode_id != current][:SUMMARIES_LIMIT]

    def summary_of(self, episode_id: str) -> SummaryRecord | None:
        return next((r for r in self.summaries if r.episode_id == episode_id), None)

    @property
    def complete(self) -> bool:
        """Every summarized episode is in `summaries` (none was left out by the limit)."""
        return len(self.summaries) <= SUMMARIES_LIMIT

    @property
    def history_tokens(self) -> int:
        return sum(record.token_total for record in self.episodes)


async def customer_history(session: AsyncSession, customer_id: str) -> CustomerHistory:
    return CustomerHistory(
        episodes=await episodes.list_episodes(session, customer_id),
        summaries=await summaries.customer_summaries(
            session, customer_id, limit=SUMMARIES_LIMIT + 1
        ),
    )


@dataclass(frozen=True, slots=True)
class CurrentTurns:
    turns: tuple[Turn, ...]
    summary: str | None
    summary_tokens: int | None
    unsummarized_tokens: int | None


async def current_turns(
    session: AsyncSession,
    customer: CustomerHistory,
    customer_id: str,
    episode: EpisodeRecord,
    before_id: int | None,
    counter: TokenCounter,
) -> CurrentTurns:
    summary = customer.summary_of(episode.id)
    if summary is None and not customer.complete:
        summary = await summaries.episode_summary(session, customer_id, episode.id)
    recent = await messages.window_lines(
        session,
        customer_id,
        episode.id,
        limit=RECENT_TURNS_LIMIT,
        after_id=summary.last_message_id if summary else None,
        before_id=before_id,
    )
    # An edited message shows only in its latest version (older versions stay stored).
    replaced = {m.supersedes_id for m in recent if m.supersedes_id is not None}
    kept = (m for m in recent if m.id not in replaced)
    turns = tuple(turn for turn in (window_turn(m, counter) for m in kept) if turn)
    return CurrentTurns(
        turns=turns,
        summary=summary.summary if summary else None,
        summary_tokens=summary.token_count if summary else None,
        unsummarized_tokens=(
            sum(m.token_count for m in recent if not m.canned)
            if len(recent) < RECENT_TURNS_LIMIT
            else None
        ),
    )
