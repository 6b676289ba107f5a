"""What the model would be sent: an identity resolved as it would be now, and the window a
sample message from it would get. Nothing is stored."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from context import TokenCounter
from gateway.customers.resolve import ResolvedIdentity, rules_for
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import ChannelIdentityRecord
from gateway.storage.repositories import customers, tenants
from gateway.tenant_ref import TenantRef
from gateway.turns.window import AssembledContext, assemble_context
from identity import ChannelIdentityKey, LinkLevel


async def preview_identity(
    session: AsyncSession,
    customer_id: str,
    identity_id: str,
    *,
    tenant: TenantRef,
    region: str | None,
) -> tuple[ChannelIdentityRecord, ResolvedIdentity]:
    """The identity as it would resolve now: its stored link level and the tenant's scopes."""
    record = await customers.identity_by_id(session, identity_id)
    if record.customer_id != customer_id:
        raise RecordNotFound(f"identity {identity_id} is not this customer's")
    key = ChannelIdentityKey.parse(record.external_id)
    settings = await tenants.settings_for(session, tenant, channel=key.channel)
    policy = rules_for(settings, region).policy
    level = LinkLevel.parse(record.link_level)
    return record, ResolvedIdentity(
        customer_id=customer_id,
        identity_id=record.id,
        key=key,
        level=level,
        allowed_scopes=policy.allowed_scopes(level, key.channel),
        outcome="known",
        pending_links=0,
        own_facts_only=level in policy.own_facts_only,
    )


async def preview_context(
    session: AsyncSession,
    counter: TokenCounter,
    identity: ResolvedIdentity,
    message: str,
    *,
    tenant: TenantRef,
) -> AssembledContext:
    """The window that would be sent for `message` from `identity` (nothing is stored)."""
    settings = await tenants.settings_for(session, tenant, channel=identity.key.channel)
    return await assemble_context(
        session, identity=identity, settings=settings, counter=counter, message=message
    )
