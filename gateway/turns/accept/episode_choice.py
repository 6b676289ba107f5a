"""Which episode a message joins: the conversation's open one, or a new one when there is none
or the open one has been idle longer than the tenant allows (it is closed then)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import InboundMessage
from gateway.customers.resolve import ResolvedIdentity
from gateway.storage.records import EpisodeRecord
from gateway.storage.repositories import episodes
from gateway.tenant_ref import TenantRef
from gateway.tenants import TenantSettings


async def episode_for(
    session: AsyncSession,
    episode: EpisodeRecord | None,
    inbound: InboundMessage,
    identity: ResolvedIdentity,
    tenant: TenantSettings,
    tenant_ref: TenantRef,
) -> tuple[EpisodeRecord, str | None]:
    """The conversation's open `episode`, or a new one; and the id of the episode closed, if
    any."""
    now = inbound.received_at
    idle = timedelta(minutes=tenant.episode_idle_minutes)
    closed: str | None = None
    if episode is not None and now - episode.last_message_at > idle:
        await episodes.close_episode(session, episode.id, episode.last_message_at)
        closed, episode = episode.id, None
    if episode is None:
        episode = await episodes.open_episode(
            session,
            customer_id=identity.customer_id,
            channel=inbound.channel,
            identity_id=identity.identity_id,
            started_at=now,
            campaign_id=inbound.campaign_id,
            tenant=tenant_ref,
        )
    return episode, closed
