"""Assemble a window for one customer and channel identity from storage.

Loads only what the window can use — the current episode's summary and its newest turns, the
scope-allowed current facts, other episodes' summaries, active anchored messages — and hands
them to the pure `context.build_window`, in four statements (the customer's episodes, their
summaries, the current episode's turns with only the columns a turn needs, the facts with the
values they no longer hold) plus one for an active campaign. Stored token counts are reused;
nothing stored is re-tokenized.

Reading those inputs is `window_loading` (episodes, summaries, current turns, facts as context
types) and `window_summaries` (the summaries slice: recall, then recent summaries); this module
puts them together.
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
    Instruction,
    OperationalState,
    TokenCounter,
    Turn,
    Window,
    build_window,
)
from context.episode import episode_demand
from context.knowledge import knowledge_slice_unused
from gateway.customers.resolve import ResolvedIdentity
from gateway.knowledge.cache import TenantKnowledge
from gateway.memory.recall import RecallCache
from gateway.runtime.clock import utcnow
from gateway.storage.records import EpisodeRecord
from gateway.storage.repositories import campaigns, facts
from gateway.tenants import TenantSettings
from gateway.tools.catalog import catalog_of
from gateway.tools.state import BusinessState
from gateway.turns.window_loading import (
    RECENT_TURNS_LIMIT,
    SUMMARIES_LIMIT,
    current_turns,
    customer_history,
    fact_item,
)
from gateway.turns.window_summaries import (
    RECALL_QUERY_CHARS,
    SLICE_MARGIN,
    facts_slice_unused,
    other_episodes,
    summary_cost,
)
from identity.levels import LinkLevel

__all__ = [
    "RECALL_QUERY_CHARS",
    "RECENT_TURNS_LIMIT",
    "SLICE_MARGIN",
    "SUMMARIES_LIMIT",
    "AssembledContext",
    "DialogueTurn",
    "assemble_context",
    "budget_for",
    "cut_dialogue",
    "summary_cost",
]


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
    # Who the window was built for: whom the turn's actions act for, at which level.
    identity: ResolvedIdentity | None = None


def actions_lines(settings: TenantSettings, level: LinkLevel) -> tuple[tuple[str, str], ...]:
    """What the window says of the tenant's actions: those the identity may use, and those that
    wait for it to be verified (the model can then offer the verification)."""
    if not (settings.tools or settings.mcp_servers):
        return ()
    catalog = catalog_of(settings.tools, settings.mcp_servers)
    usable = [spec.name for spec in catalog.offered(level) if spec.name in catalog.actions]
    held = [spec.name for spec in catalog.held_back(level)]
    for server in settings.mcp_servers:  # its tools as the settings gate them
        for name, gate in server.tools.items():
            reached = level >= LinkLevel.parse(gate.min_link_level)
            (usable if reached else held).append(name)
    lines: list[tuple[str, str]] = []
    if usable:
        lines.append(("actions", ", ".join(usable)))
    if held:
        lines.append(("actions after verification", ", ".join(held)))
    return tuple(lines)


def budget_for(settings: TenantSettings, window: int | None = None) -> Budget:
    """The tenant's budget; another window size scales it proportionally. A tenant with
    actions keeps `tool_results_tokens` of it for their results."""
    slices = settings.slices
    results = settings.tool_results_tokens if settings.tools or settings.mcp_servers else 0
    if window is None or window == settings.window:
        return Budget.for_window(
            settings.window,
            output_reserve=settings.output_reserve,
            protocol_margin=settings.protocol_margin,
            instruction=slices.instruction,
            state=slices.state,
            facts=slices.facts,
            summaries=slices.summaries,
            knowledge=slices.knowledge,
            current_episode=slices.current_episode,
            max_single_message_tokens=settings.max_single_message_tokens,
            truncated_message_target_tokens=settings.truncated_message_target_tokens,
            max_input_chars=settings.max_input_chars,
            tool_results=results,
        )
    return Budget.for_window(
        window,
        max_input_chars=settings.max_input_chars,
        tool_results=results * window // settings.window,
        # A tenant that turned its knowledge base off keeps it off at any window size.
        knowledge=0 if slices.knowledge == 0 else None,
    )


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
    business: BusinessState | None = None,
    knowledge: TenantKnowledge | None = None,
) -> AssembledContext:
    """Build the window for `message` from `identity`'s customer as stored now.

    For a stored inbound message pass its `episode_id` and `message_id`: the episode's turns
    are then the ones before it (later arrivals wait for their own turn). `channel` is the
    conversation's channel where it is not the identity's own (a WhatsApp number written to
    through the Cloud API, `whatsapp_cloud`, is the `whatsapp` identity); a stored episode
    brings its own. `business`: the business's operational state of the conversation (an open
    ticket, a few lines), asked of the tenant's `state_endpoint` beforehand. `knowledge`:
    where the tenant's knowledge chunks are read, those the identity's link level may be told.
    """
    customer_id = identity.customer_id
    channel = channel or identity.key.channel
    budget = budget_for(settings, window)
    customer = await customer_history(session, customer_id)
    if episode_id is not None:
        episode: EpisodeRecord | None = customer.episode(episode_id)
        if episode is not None:
            channel = episode.channel
    else:
        episode = customer.latest_open(channel, identity.identity_id)
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
        current = await current_turns(session, customer, customer_id, episode, message_id, counter)
        turns, summary_text, summary_tokens = current.turns, current.summary, current.summary_tokens
        unsummarized = current.unsummarized_tokens
    else:
        turns = ()

    allowed = identity.allowed_scopes
    fact_records, stale = await facts.window_facts(session, customer_id, allowed)
    if identity.own_facts_only:
        fact_records = [f for f in fact_records if f.source_identity_id == identity.identity_id]
    fact_items = tuple(fact_item(record) for record in fact_records)
    current_episode = CurrentEpisode(
        id=episode.id if episode else "new",
        channel=channel,
        turns=turns,
        summary=summary_text,
        summary_tokens=summary_tokens,
    )
    knowledge_index = (
        await knowledge.index(session, identity.level)
        if knowledge is not None and budget.slice_budget("knowledge") > 0
        else None
    )
    knowledge_items = knowledge_index.items if knowledge_index is not None else ()
    knowledge_similarities = (
        await knowledge.similarities(session, message, knowledge_items)
        if knowledge is not None and knowledge_items
        else None
    )
    # What the facts and the knowledge slices will pass on to the summaries.
    passed_on = knowledge_slice_unused(
        message,
        knowledge_items,
        budget.slice_budget("knowledge") + facts_slice_unused(fact_items, budget, counter),
        counter,
        knowledge_index,
        knowledge_similarities,
    )
    episode_unused = max(
        0,
        budget.slice_budget("current_episode")
        - episode_demand(current_episode, message, budget, counter),
    )
    other_summaries = await other_episodes(
        session,
        customer,
        identity,
        counter,
        message,
        budget,
        episode.id if episode else None,
        passed_on,
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
            open_ticket=business.open_ticket if business is not None else None,
            extra=actions_lines(settings, identity.level)
            + (business.extra if business is not None else ()),
        ),
        episode=current_episode,
        message=message[: budget.max_input_chars],
        message_id=str(message_id) if message_id is not None else "current",
        anchored=tuple(anchored),
        facts=fact_items,
        summaries=other_summaries,
        full_history_tokens=customer.history_tokens,
        knowledge=knowledge_items,
        knowledge_index=knowledge_index,
        knowledge_similarities=knowledge_similarities,
    )
    return AssembledContext(
        window=build_window(request, budget, counter),
        episode_id=episode.id if episode else None,
        dialogue_chars_dropped=dropped_chars,
        unsummarized_tokens=unsummarized,
        identity=identity,
    )
