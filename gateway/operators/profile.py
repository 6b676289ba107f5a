"""The unified profile an operator sees: everything stored about one customer, read at once."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.customers import operator_actions
from gateway.storage.records import (
    ChannelIdentityRecord,
    CompactionTraceRecord,
    CustomerRecord,
    EpisodeRecord,
    FactRecord,
    IdentifierRecord,
    MessageRecord,
    PendingLinkRecord,
    SummaryRecord,
)
from gateway.storage.repositories import customers, episodes, messages, profiles, summaries

MESSAGES_PER_EPISODE = 200


@dataclass(frozen=True, slots=True)
class Profile:
    customer: CustomerRecord
    identities: tuple[ChannelIdentityRecord, ...]
    identifiers: tuple[IdentifierRecord, ...]
    pending: tuple[PendingLinkRecord, ...]
    facts: tuple[FactRecord, ...]  # every row: current, superseded and retracted
    episodes: tuple[tuple[EpisodeRecord, tuple[MessageRecord, ...]], ...]  # recent messages
    summaries: tuple[SummaryRecord, ...]
    traces: tuple[CompactionTraceRecord, ...]


async def load_profile(
    session: AsyncSession, customer_id: str, *, messages_per_episode: int = MESSAGES_PER_EPISODE
) -> Profile:
    """The customer's profile, each episode with its latest `messages_per_episode` messages.
    Raises `RecordNotFound` for an unknown customer."""
    customer = await customers.get_customer(session, customer_id)
    found = await episodes.list_episodes(session, customer_id)
    with_messages = []
    for episode in found:
        recent = await messages.recent_messages(
            session, customer_id, episode.id, limit=messages_per_episode
        )
        with_messages.append((episode, tuple(recent)))
    return Profile(
        customer=customer,
        identities=tuple(await customers.list_identities(session, customer_id)),
        identifiers=tuple(await customers.identifiers_of(session, customer_id)),
        pending=tuple(await operator_actions.list_pending_links(session, customer_id=customer_id)),
        facts=tuple(await profiles.all_facts(session, customer_id)),
        episodes=tuple(with_messages),
        summaries=tuple(await summaries.customer_summaries(session, customer_id)),
        traces=tuple(await summaries.list_traces(session, customer_id)),
    )
