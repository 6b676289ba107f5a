"""Write a synthetic history into a migrated database, fast but with the ingest invariants.

Messages go in with multi-row Core inserts and the token counts ingest would have stored;
each episode's ``token_total`` is the sum of its messages' counts. The WhatsApp identity is
created by the real identity step (so ``POST /v1/context`` resolves to the same customer);
summaries and facts go through their repositories (facts supersede as they would live).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.storage.models import Episode, Message, new_id
from gateway.storage.records import NewFact
from gateway.storage.repositories import customers, facts, summaries
from gateway.tenants import TenantSettings
from identity import WhatsAppSender, observe
from tools.bench.history import SyntheticHistory, compaction_pointer

INSERT_BATCH = 5_000


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
        episode_ids = [new_id() for _ in history.episodes]
        await session.execute(
            insert(Episode),
            [
                {
                    "id": episode_ids[index],
                    "customer_id": customer_id,
                    "channel": episode.channel,
                    "identity_id": identities[episode.channel],
                    "status": "open" if episode.is_open else "closed",
                    "transcript_confidence": episode.confidence,
                    "token_total": sum(tokens[index]),
                    "started_at": episode.started_at,
                    "last_message_at": episode.last_message_at,
                    "ended_at": None if episode.is_open else episode.last_message_at,
                }
                for index, episode in enumerate(history.episodes)
            ],
        )
        message_ids: list[list[int]] = []
        for index, episode in enumerate(history.episodes):
            rows = [
                {
                    "customer_id": customer_id,
                    "episode_id": episode_ids[index],
                    "identity_id": identities[episode.channel],
                    "channel": episode.channel,
                    "role": message.role,
                    "text": message.text,
                    "provider_message_id": f"bench-{history.size}-{index}-{position}",
                    "token_count": tokens[index][position],
                    "transcript_confidence": message.confidence,
                    "redacted": False,
                    "created_at": message.created_at,
                }
                for position, message in enumerate(episode.messages)
            ]
            for start in range(0, len(rows), INSERT_BATCH):
                await session.execute(insert(Message), rows[start : start + INSERT_BATCH])
            message_ids.append(
                list(
                    await session.scalars(
                        select(Message.id)
                        .where(Message.episode_id == episode_ids[index])
                        .order_by(Message.id)
                    )
                )
            )
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
    created: dict[str, str] = {}
    for channel, (external_id, level) in keys.items():
        record = await customers.create_identity(
            session,
            customer_id=customer_id,
            channel=channel,
            external_id=external_id,
            link_level=level,
            evidence={"description": "benchmark fixture", "level": level},
        )
        created[channel] = record.id
    return created


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
