"""Which tenant a message belongs to: resolved once where it enters, stored with every row it
produces, and the key of every later settings lookup, model limit and per-tenant Redis key.

A turn accepted through a host must be answered, compacted and retained under that host's
settings, even when the later step runs in another process long after the request is gone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from urllib.parse import unquote

DEFAULT_DOMAIN = "default"

# Percent-encoding only the separator and the escape itself keeps ordinary hosts readable in
# the stored value ("default/shop.example.com") and lets a migration backfill it in SQL.
_SEPARATOR = "/"


def _encode_part(part: str | None) -> str:
    return "" if part is None else part.replace("%", "%25").replace(_SEPARATOR, "%2F")


def _decode_part(part: str) -> str | None:
    return unquote(part) if part else None


@dataclass(frozen=True, slots=True)
class TenantRef:
    """A tenant as the settings lookup names it: domain, then optionally host and assistant."""

    domain: str = DEFAULT_DOMAIN
    host: str | None = None
    assistant_id: str | None = None

    def __post_init__(self) -> None:
        if not self.domain:
            raise ValueError("a tenant needs a domain")
        # An empty host or assistant would encode like a missing one: keep one spelling.
        if self.host == "":
            object.__setattr__(self, "host", None)
        if self.assistant_id == "":
            object.__setattr__(self, "assistant_id", None)

    def encode(self) -> str:
        """`domain[/host[/assistant]]`, each part percent-encoded; trailing empty parts left
        off, so the default tenant is stored as plain `default`."""
        parts = [
            _encode_part(self.domain),
            _encode_part(self.host),
            _encode_part(self.assistant_id),
        ]
        while len(parts) > 1 and not parts[-1]:
            parts.pop()
        return _SEPARATOR.join(parts)

    @classmethod
    def decode(cls, encoded: str) -> TenantRef:
        """The stored value read back; one shared object per value (every row read carries
        its tenant, and a deployment has few: no allocations per row)."""
        return _decoded(encoded)

    @classmethod
    def for_host(cls, host: str | None, *, assistant_id: str | None = None) -> TenantRef:
        """The tenant of a request that reached us through `host` (the domain is the default
        one: no host maps to another domain yet)."""
        return cls(domain=DEFAULT_DOMAIN, host=host, assistant_id=assistant_id)


@functools.lru_cache(maxsize=1024)
def _decoded(encoded: str) -> TenantRef:
    parts = encoded.split(_SEPARATOR)
    if len(parts) > 3 or not parts[0]:
        raise ValueError(f"not a tenant reference: {encoded!r}")
    parts += [""] * (3 - len(parts))
    return TenantRef(
        domain=unquote(parts[0]),
        host=_decode_part(parts[1]),
        assistant_id=_decode_part(parts[2]),
    )


DEFAULT_TENANT = TenantRef()
DEFAULT_TENANT_ENCODED = DEFAULT_TENANT.encode()
