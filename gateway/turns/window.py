"""Assemble a window for one customer and channel identity from storage.

Loads only what the window can use — the current episode's summary and its newest turns, the
scope-allowed current facts, other episodes' summaries, active anchored messages — and hands
them to the pure `context.build_window`, in four statements (the customer's episodes, their
summaries, the current episode's turns with only the columns a turn needs, the facts with the
values they no longer hold) plus one for an active campaign. Stored token counts are reused;
nothing stored is re-tokenized.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from context import (
    AnchoredMessage,
    Budget,
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    OperationalState,
    SummaryItem,
    TokenCounter,
    Turn,
    Window,
    build_window,
)
from context.episode import episode_demand
from context.render import (
    FACTS_HEADER,
    SUMMARIES_HEADER,
    fact_line,
    human_agent_tag,
    summary_tag,
)
from context.superseded import without_stale
from gateway.customers.resolve import ResolvedIdentity
from gateway.memory.recall import RecallCache, RecallScope, recall_items
from gateway.memory.summaries import summary_item
from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import EpisodeRecord, FactRecord, SummaryRecord, WindowLine
from gateway.storage.repositories import campaigns, episodes, facts, messages, summaries
from gateway.tenants import TenantSettings

# The newest turns loaded for the current episode; the episode slice holds far fewer.
RECENT_TURNS_LIMIT = 400
# The start of a long message is what recall searches with.
RECALL_QUERY_CHARS = 4_000
# The other episodes' summaries a window considers (most recent first).
SUMMARIES_LIMIT = 200
# Tokens of the summaries slice kept free of recall (block separator and rounding).
SLICE_MARGIN = 8


@dataclass(frozen=True, slots=True)
class DialogueTurn:
    """A turn of a caller-supplied dialogue (it stands in for the stored episode)."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class AssembledContext:
    window: Window
    episode_id: str | None
    dialogue_chars_dropped: int
    # The stored tokens of the episode's messages after its summary and before the message,
    # canned notices left out, as read for the window: what compaction's trigger sums, without
    # reading them again. None when the window did not read them all (more than
    # `RECENT_TURNS_LIMIT`, or no stored episode).
    unsummarized_tokens: int | None = None


def budget_for(settings: TenantSettings, window: int | None = None) -> Budget:
    """The tenant's budget; another window size scales it proportionally."""
    slices = settings.slices
    if window is None or window == settings.window:
        return Budget.for_window(
            settings.window,
            output_reserve=settings.output_reserve,
            protocol_margin=settings.protocol_margin,
            instruction=slices.instruction,
            state=slices.state,
            facts=slices.facts,
            summaries=slices.summaries,
            current_episode=slices.current_episode,
            max_single_message_tokens=settings.max_single_message_tokens,
            truncated_message_target_tokens=settings.truncated_message_target_tokens,
            max_input_chars=settings.max_input_chars,
        )
    return Budget.for_window(window, max_input_chars=settings.max_input_chars)


def cut_dialogue(
    dialogue: Sequence[DialogueTurn], max_chars: int
) -> tuple[list[DialogueTurn], int]:
    """Apply the `max_input_chars` hard limit before anything else: keep the newest turns
    that fit, cut the oldest kept one from its start. Returns (turns, characters dropped)."""
    kept: list[DialogueTurn] = []
    room = max_chars
    for turn in reversed(dialogue):
        if room <= 0:
            break
        kept.append(
            turn if len(turn.content) <= room else DialogueTurn(turn.role, turn.content[-room:])
        )
        room -= len(kept[-1].content)
    kept.reverse()
    total = sum(len(turn.content) for turn in dialogue)
    return kept, total - sum(len(turn.content) for turn in kept)


def _turn(message: WindowLine, counter: TokenCounter) -> Turn | None:
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


def _fact(record: FactRecord) -> FactItem:
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


def summary_cost(item: SummaryItem, counter: TokenCounter) -> int:
    """What an entry costs in the summaries block: "\n", its tag, "\n", its text."""
    return 2 + counter.count(summary_tag(item)) + item.tokens


@dataclass(frozen=True, slots=True)
class _Customer:
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


async def _customer(session: AsyncSession, customer_id: str) -> _Customer:
    return _Customer(
        episodes=await episodes.list_episodes(session, customer_id),
        summaries=await summaries.customer_summaries(
            session, customer_id, limit=SUMMARIES_LIMIT + 1
        ),
    )


@dataclass(frozen=True, slots=True)
class _CurrentTurns:
    turns: tuple[Turn, ...]
    summary: str | None
    summary_tokens: int | None
    unsummarized_tokens: int | None


async def _current_turns(
    session: AsyncSession,
    customer: _Customer,
    customer_id: str,
    episode: EpisodeRecord,
    before_id: int | None,
    counter: TokenCounter,
) -> _CurrentTurns:
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
    turns = tuple(turn for turn in (_turn(m, counter) for m in kept) if turn)
    return _CurrentTurns(
        turns=turns,
        summary=summary.summary if summary else None,
        summary_tokens=summary.token_count if summary else None,
        unsummarized_tokens=(
            sum(m.token_count for m in recent if not m.canned)
            if len(recent) < RECENT_TURNS_LIMIT
            else None
        ),
    )


def _facts_unused(items: Sequence[FactItem], budget: Budget, counter: TokenCounter) -> int:
    """What the facts slice will leave unused (an estimate: every fact's line plus the block
    header)."""
    if not items:
        return budget.slice_budget("facts")
    cost = counter.count(FACTS_HEADER) + 2 + sum(1 + counter.count(fact_line(f)) for f in items)
    return max(0, budget.slice_budget("facts") - cost)


async def _other_episodes(
    session: AsyncSession,
    customer: _Customer,
    identity: ResolvedIdentity,
    counter: TokenCounter,
    message: str,
    budget: Budget,
    exclude_episode: str | None,
    facts_unused: int,
    recall_cache: RecallCache | None = None,
    episode_unused: int = 0,
    stale: Sequence[str] = (),
) -> tuple[SummaryItem, ...]:
    """The summaries slice: recall first (the lines of other episodes most relevant to the
    message, each episode's lines tagged with its origin), then the most recent summaries of
    the episodes recall left out, while the slice has room. The room is the summaries slice
    plus what the facts slice leaves unused (a slice's unused budget passes to the next). What
    the current episode will leave unused (known beforehand from `episode_demand`) is offered
    to recall's most relevant lines as well. Lines carrying a value the customer corrected since
    (`stale`) are left out of both."""
    records = customer.other_summaries(exclude_episode)
    room = (
        budget.slice_budget("summaries")
        + facts_unused
        - counter.count(SUMMARIES_HEADER)
        - SLICE_MARGIN
    )
    scope = RecallScope(
        customer_id=identity.customer_id,
        identity_id=identity.identity_id,
        allowed_scopes=identity.allowed_scopes,
        own_facts_only=identity.own_facts_only,
    )
    recalled = await recall_items(
        session,
        scope,
        message=message[:RECALL_QUERY_CHARS],
        budget=room,
        counter=counter,
        exclude_episode=exclude_episode,
        summary_records=records,
        cache=recall_cache,
        extra=episode_unused,
        episode_records=customer.episodes,
    )
    represented = {item.episode_id for item in recalled}
    chosen = [kept for item in recalled if (kept := without_stale(item, stale, counter))]
    room -= sum(summary_cost(item, counter) for item in chosen)
    for record in records:  # most recent first
        if record.episode_id in represented:
            continue
        item = without_stale(summary_item(record), stale, counter)
        if item is None:
            continue
        cost = summary_cost(item, counter)
        if cost <= room:
            chosen.append(item)
            room -= cost
    return tuple(chosen)


async def assemble_context(
    session: AsyncSession,
    *,
    identity: ResolvedIdentity,
    settings: TenantSettings,
    counter: TokenCounter,
    message: str,
    window: int | None = None,
    dialogue: Sequence[DialogueTurn] | None = None,
    campaign_id: str | None = None,
    today: date | None = None,
    episode_id: str | None = None,
    message_id: int | None = None,
    recall_cache: RecallCache | None = None,
    channel: str | None = None,
) -> AssembledContext:
    """Build the window for `message` from `identity`'s customer as stored now.

    For a stored inbound message pass its `episode_id` and `message_id`: the episode's turns
    are then the ones before it (later arrivals wait for their own turn). `channel` is the
    conversation's channel where it is not the identity's own (a WhatsApp number written to
    through the Cloud API, `whatsapp_cloud`, is the `whatsapp` identity); a stored episode
    brings its own.
    """
    customer_id = identity.customer_id
    channel = channel or identity.key.channel
    budget = budget_for(settings, window)
    customer = await _customer(session, customer_id)
    if episode_id is not None:
        episode: EpisodeRecord | None = customer.episode(episode_id)
        if episode is not None:
            channel = episode.channel
    else:
        episode = await episodes.latest_open_episode(
            session, customer_id, channel, identity.identity_id
        )
    dropped_chars = 0
    summary_text: str | None = None
    summary_tokens: int | None = None
    unsummarized: int | None = None
    if dialogue is not None:
        now = utcnow()
        kept, dropped_chars = cut_dialogue(dialogue, budget.max_input_chars)
        turns = tuple(
            Turn(
                id=f"dialogue:{index}",
                role="assistant" if turn.role == "assistant" else "user",
                text=turn.content,
                tokens=counter.count(turn.content),
                channel=channel,
                created_at=now,
            )
            for index, turn in enumerate(kept)
            if turn.role in ("user", "assistant")
        )
    elif episode is not None:
        current = await _current_turns(session, customer, customer_id, episode, message_id, counter)
        turns, summary_text, summary_tokens = current.turns, current.summary, current.summary_tokens
        unsummarized = current.unsummarized_tokens
    else:
        turns = ()

    allowed = identity.allowed_scopes
    fact_records, stale = await facts.window_facts(session, customer_id, allowed)
    if identity.own_facts_only:
        fact_records = [f for f in fact_records if f.source_identity_id == identity.identity_id]
    fact_items = tuple(_fact(record) for record in fact_records)
    current_episode = CurrentEpisode(
        id=episode.id if episode else "new",
        channel=channel,
        turns=turns,
        summary=summary_text,
        summary_tokens=summary_tokens,
    )
    episode_unused = max(
        0,
        budget.slice_budget("current_episode")
        - episode_demand(current_episode, message, budget, counter),
    )
    other_summaries = await _other_episodes(
        session,
        customer,
        identity,
        counter,
        message,
        budget,
        episode.id if episode else None,
        _facts_unused(fact_items, budget, counter),
        recall_cache,
        episode_unused,
        stale,
    )
    anchored: list[AnchoredMessage] = []
    active_campaign = campaign_id or (episode.campaign_id if episode else None)
    if active_campaign is not None:
        for item in await campaigns.active_anchored_messages(
            session, active_campaign, today or date.today()
        ):
            anchored.append(AnchoredMessage(str(item.id), item.campaign_id, item.text))

    request = ContextRequest(
        instruction=Instruction(settings.instruction),
        state=OperationalState(
            channel=channel,
            link_level=identity.level.value,
            allowed_scopes=tuple(sorted(allowed)),
        ),
        episode=current_episode,
        message=message[: budget.max_input_chars],
        message_id=str(message_id) if message_id is not None else "current",
        anchored=tuple(anchored),
        facts=fact_items,
        summaries=other_summaries,
        full_history_tokens=customer.history_tokens,
    )
    return AssembledContext(
        window=build_window(request, budget, counter),
        episode_id=episode.id if episode else None,
        dialogue_chars_dropped=dropped_chars,
        unsummarized_tokens=unsummarized,
    )
