"""The tenant of a request, resolved once where it enters (webhook, web chat, API, console)."""

from __future__ import annotations

from aiohttp import web

from gateway.tenant_ref import TenantRef


def tenant_of(request: web.Request, *, assistant_id: str | None = None) -> TenantRef:
    """The tenant a request reached us through: its host (no host maps to another domain and
    no API key names a tenant yet, so the domain is the default one)."""
    return TenantRef.for_host(request.host or None, assistant_id=assistant_id)
