"""The summaries slice of a window: recall's most relevant lines of other episodes first, then
the most recent summaries of the episodes recall left out, while the slice has room."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from context import Budget, FactItem, SummaryItem, TokenCounter
from context.render import FACTS_HEADER, SUMMARIES_HEADER, fact_line, summary_tag
from context.superseded import without_stale
from gateway.customers.resolve import ResolvedIdentity
from gateway.memory.recall import RecallCache, RecallScope, recall_items
from gateway.memory.summaries import summary_item
from gateway.turns.window_loading import CustomerHistory

# The start of a long message is what recall searches with.
RECALL_QUERY_CHARS = 4_000
# Tokens of the summaries slice kept free of recall (block separator and rounding).
SLICE_MARGIN = 8


def summary_cost(item: SummaryItem, counter: TokenCounter) -> int:
    """What an entry costs in the summaries block: "\n", its tag, "\n", its text."""
    return 2 + counter.count(summary_tag(item)) + item.tokens


def facts_slice_unused(items: Sequence[FactItem], budget: Budget, counter: TokenCounter) -> int:
    """What the facts slice will leave unused (an estimate: every fact's line plus the block
    header)."""
    if not items:
        return budget.slice_budget("facts")
    cost = counter.count(FACTS_HEADER) + 2 + sum(1 + counter.count(fact_line(f)) for f in items)
    return max(0, budget.slice_budget("facts") - cost)


async def other_episodes(
    session: AsyncSession,
    customer: CustomerHistory,
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
    """The summaries slice. The room is the summaries slice plus what the facts slice leaves
    unused (a slice's unused budget passes to the next). What the current episode will leave
    unused (known beforehand from `episode_demand`) is offered to recall's most relevant lines
    as well. Lines carrying a value the customer corrected since (`stale`) are left out of
    both; each episode's recalled lines are tagged with their origin."""
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
