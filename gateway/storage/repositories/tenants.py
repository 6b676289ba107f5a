"""Stored tenant settings per level (domain, host, assistant), and a short-lived cache of the
effective settings for the hot paths (every inbound message and every reply reads them)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import TenantConfig
from gateway.tenant_ref import DEFAULT_DOMAIN, TenantRef
from gateway.tenants import TenantSettings, effective_settings

__all__ = [
    "DEFAULT_DOMAIN",
    "SettingsCache",
    "save_tenant_settings",
    "settings_for",
    "settings_layers",
    "stored_level",
    "stored_levels",
    "tenant_settings",
]


async def save_tenant_settings(
    session: AsyncSession,
    *,
    domain: str,
    settings: dict[str, Any],
    host: str | None = None,
    assistant_id: str | None = None,
) -> None:
    row = await session.scalar(
        select(TenantConfig).where(
            TenantConfig.domain == domain,
            TenantConfig.host.is_(None) if host is None else TenantConfig.host == host,
            TenantConfig.assistant_id.is_(None)
            if assistant_id is None
            else TenantConfig.assistant_id == assistant_id,
        )
    )
    if row is None:
        session.add(
            TenantConfig(domain=domain, host=host, assistant_id=assistant_id, settings=settings)
        )
    else:
        row.settings = settings
    await session.flush()
    SettingsCache.writes += 1


async def stored_level(
    session: AsyncSession,
    *,
    domain: str,
    host: str | None = None,
    assistant_id: str | None = None,
) -> dict[str, Any] | None:
    """The settings stored at exactly this level (None: no row), read for update."""
    row = await session.scalar(
        select(TenantConfig)
        .where(
            TenantConfig.domain == domain,
            TenantConfig.host.is_(None) if host is None else TenantConfig.host == host,
            TenantConfig.assistant_id.is_(None)
            if assistant_id is None
            else TenantConfig.assistant_id == assistant_id,
        )
        .with_for_update()
    )
    return None if row is None else dict(row.settings or {})


async def stored_levels(
    session: AsyncSession, *, domain: str
) -> dict[tuple[str | None, str | None], dict[str, Any]]:
    """Every level stored under the domain, by (host, assistant)."""
    rows = await session.scalars(select(TenantConfig).where(TenantConfig.domain == domain))
    return {(row.host, row.assistant_id): dict(row.settings or {}) for row in rows}


async def settings_layers(
    session: AsyncSession,
    *,
    domain: str,
    host: str | None = None,
    assistant_id: str | None = None,
) -> list[dict[str, Any]]:
    """The stored levels that apply, most specific first: assistant, host, domain."""
    rows = list(await session.scalars(select(TenantConfig).where(TenantConfig.domain == domain)))

    def level(host_: str | None, assistant_: str | None) -> dict[str, Any] | None:
        for row in rows:
            if row.host == host_ and row.assistant_id == assistant_:
                return dict(row.settings or {})
        return None

    candidates = []
    if assistant_id is not None:
        # An assistant's row may be stored under its host or directly under the domain.
        candidates.append(level(host, assistant_id) or level(None, assistant_id))
    if host is not None:
        candidates.append(level(host, None))
    candidates.append(level(None, None))
    return [layer for layer in candidates if layer is not None]


async def settings_for(
    session: AsyncSession, tenant: TenantRef, *, channel: str | None = None
) -> TenantSettings:
    """The effective settings of a stored tenant (`TenantRef`), uncached."""
    return await tenant_settings(
        session,
        host=tenant.host,
        channel=channel,
        assistant_id=tenant.assistant_id,
        domain=tenant.domain,
    )


async def tenant_settings(
    session: AsyncSession,
    *,
    host: str | None = None,
    channel: str | None = None,
    assistant_id: str | None = None,
    domain: str = DEFAULT_DOMAIN,
) -> TenantSettings:
    """The effective settings for a request: assistant → host → domain → defaults."""
    layers = await settings_layers(session, domain=domain, host=host, assistant_id=assistant_id)
    return effective_settings(layers, channel=channel)


CacheKey = tuple[str, str | None, str | None, str | None]


class SettingsCache:
    """Effective settings per (domain, host, assistant, channel) for `ttl_s` seconds.

    Tenant settings change rarely and are read on every message: caching them saves a query and
    a validation per message. A save in this process empties every cache (it bumps `writes`);
    one made by another process is seen within `ttl_s`. One cache per database (the pipeline
    owns one), since keys do not name the database.
    """

    writes = 0  # saves made in this process

    def __init__(self, ttl_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[CacheKey, tuple[float, TenantSettings]] = {}
        self._seen_writes = SettingsCache.writes

    async def get(
        self,
        session: AsyncSession,
        *,
        host: str | None = None,
        channel: str | None = None,
        assistant_id: str | None = None,
        domain: str = DEFAULT_DOMAIN,
    ) -> TenantSettings:
        if self._seen_writes != SettingsCache.writes:
            self._entries.clear()
            self._seen_writes = SettingsCache.writes
        key = (domain, host, assistant_id, channel)
        now = self._clock()
        cached = self._entries.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        settings = await tenant_settings(
            session, host=host, channel=channel, assistant_id=assistant_id, domain=domain
        )
        if len(self._entries) >= 1024:  # hosts come from requests: keep the map bounded
            self._entries.clear()
        self._entries[key] = (now + self._ttl_s, settings)
        return settings

    async def for_tenant(
        self, session: AsyncSession, tenant: TenantRef, *, channel: str | None = None
    ) -> TenantSettings:
        """`get` for a stored tenant: the settings every step of its messages follows."""
        return await self.get(
            session,
            host=tenant.host,
            channel=channel,
            assistant_id=tenant.assistant_id,
            domain=tenant.domain,
        )
