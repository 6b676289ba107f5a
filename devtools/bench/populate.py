"""Write a synthetic history into a migrated database, fast but with the ingest invariants.

Episodes and messages go in through `gateway.storage.repositories.bulk` (multi-row inserts with
the token counts ingest would have stored; each episode's ``token_total`` is the sum of its
messages' counts). The WhatsApp identity is created by the real identity step (so
``POST /v1/context`` resolves to the same customer); summaries and facts go through their
repositories (facts supersede as they would live).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from devtools.bench.history import SyntheticHistory, compaction_pointer
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.storage.records import NewFact
from gateway.storage.repositories import bulk, facts, summaries
from gateway.tenants import TenantSettings
from identity import WhatsAppSender, observe


@dataclass(frozen=True, slots=True)
class SeededCustomer:
    """A customer written by `populate`."""

    size: int
    identity: ResolvedIdentity  # the WhatsApp identity of the open episode
    external_id: str
    history_tokens: int
    seconds: float


async def populate(
    sessions: async_sessionmaker[AsyncSession],
    history: SyntheticHistory,
    tokens: Sequence[Sequence[int]],
    settings: TenantSettings,
    counter: TokenCounter,
) -> SeededCustomer:
    """Store ``history`` (with ``tokens`` from `count_tokens`) in one transaction."""
    started = time.perf_counter()
    async with sessions.begin() as session:
        identity = await resolve_identity(
            session, observe(WhatsAppSender(history.whatsapp_external_id))
        )
        customer_id = identity.customer_id
        identities = {
            "whatsapp": identity.identity_id,
            **await _other_identities(session, customer_id, history),
        }
        written = await bulk.write_episodes(
            session,
            customer_id,
            [
                bulk.BulkEpisode(
                    channel=episode.channel,
                    identity_id=identities[episode.channel],
                    started_at=episode.started_at,
                    last_message_at=episode.last_message_at,
                    messages=tuple(
                        bulk.BulkMessage(
                            role=message.role,
                            text=message.text,
                            token_count=tokens[index][position],
                            created_at=message.created_at,
                            provider_message_id=f"bench-{history.size}-{index}-{position}",
                            transcript_confidence=message.confidence,
                        )
                        for position, message in enumerate(episode.messages)
                    ),
                    closed=not episode.is_open,
                    transcript_confidence=episode.confidence,
                )
                for index, episode in enumerate(history.episodes)
            ],
        )
        episode_ids = [stored.episode.id for stored in written]
        message_ids = [stored.message_ids for stored in written]
        await _summaries(
            session, customer_id, history, tokens, episode_ids, message_ids, settings, counter
        )
        for fact in history.facts:
            await facts.record_fact(
                session,
                customer_id,
                NewFact(
                    key=fact.key,
                    value=fact.value,
                    scope=fact.scope,
                    source_message_id=message_ids[fact.episode][fact.message],
                    tags=fact.tags,
                    confirmed=fact.confirmed,
                    pinned=fact.pinned,
                ),
            )
    return SeededCustomer(
        size=history.size,
        identity=identity,
        external_id=history.whatsapp_external_id,
        history_tokens=sum(sum(counts) for counts in tokens),
        seconds=time.perf_counter() - started,
    )


async def _other_identities(
    session: AsyncSession, customer_id: str, history: SyntheticHistory
) -> dict[str, str]:
    keys = {
        "telegram": (f"telegram:{history.telegram_user}", "asserted"),
        "webchat": (f"web:acct:{history.web_account}", "verified"),
        "phone": (f"phone:{history.phone}", "verified"),
    }
    created = await bulk.create_identities(
        session, customer_id, keys, description="benchmark fixture"
    )
    return {channel: record.id for channel, record in created.items()}


async def _summaries(
    session: AsyncSession,
    customer_id: str,
    history: SyntheticHistory,
    tokens: Sequence[Sequence[int]],
    episode_ids: Sequence[str],
    message_ids: Sequence[Sequence[int]],
    settings: TenantSettings,
    counter: TokenCounter,
) -> None:
    """Closed episodes are summarized whole; the open one as far as compaction got."""
    for index, episode in enumerate(history.episodes):
        last: int | None = len(episode.messages) - 1
        if episode.is_open:
            last = compaction_pointer(
                tokens[index],
                threshold=settings.threshold_tokens,
                low_water=settings.low_water_tokens,
                keep_recent=settings.keep_recent_turns,
            )
        if last is None:
            continue
        await summaries.save_summary(
            session,
            customer_id=customer_id,
            episode_id=episode_ids[index],
            summary=episode.summary,
            last_message_id=message_ids[index][last],
            origin_channel=episode.channel,
            token_count=counter.count(episode.summary),
            transcript_confidence=episode.confidence,
        )
