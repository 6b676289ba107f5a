"""Tenant settings stored for a running gateway's default domain (every host of it reads them,
unless a host or an assistant overrides a key)."""

from __future__ import annotations

from gateway.storage.repositories import tenants
from tests.support.stack import Stack


async def save_domain_settings(stack: Stack, **settings: object) -> None:
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(session, domain="default", settings=dict(settings))
