"""A customer with one episode of messages, written to real storage (memory tests)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, load_encoding
from gateway.storage.records import NewMessage
from gateway.storage.repositories import customers, episodes, messages
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef

COUNTER = TiktokenCounter(load_encoding())


@dataclass(frozen=True)
class StoredEpisode:
    customer_id: str
    episode_id: str
    message_ids: list[int]


async def store_episode(
    session: AsyncSession,
    lines: Sequence[tuple[str, str]],
    *,
    started_at: datetime,
    channel: str = "whatsapp",
    every: timedelta = timedelta(minutes=1),
    closed_at: datetime | None = None,
    tenant: TenantRef = DEFAULT_TENANT,
) -> StoredEpisode:
    """A new customer whose episode (of `tenant`) holds `lines` ((role, text), one every
    `every`)."""
    customer = await customers.create_customer(session)
    episode = await episodes.open_episode(
        session, customer_id=customer.id, channel=channel, started_at=started_at, tenant=tenant
    )
    ids = []
    for index, (role, text) in enumerate(lines):
        stored = await messages.append_message(
            session,
            NewMessage(
                customer.id,
                episode.id,
                channel,
                role,
                text,
                COUNTER.count(text),
                created_at=started_at + every * index,
                tenant=tenant,
            ),
        )
        ids.append(stored.id)
    if closed_at is not None:
        await episodes.close_episode(session, episode.id, closed_at)
    return StoredEpisode(customer.id, episode.id, ids)
