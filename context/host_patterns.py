"""Host patterns: a list of hosts a setting lets through, each a hostname or address
(`cdn.example.org`, `10.0.0.7`) or, with a leading `*.`, any subdomain of one
(`*.example.org` is `a.example.org` and `a.b.example.org`, not `example.org` itself).
Matching ignores case and a trailing dot.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A DNS name (labels of letters, digits and inner hyphens) or an address: IPv4 dotted, IPv6
# with colons (never with brackets). Underscores are let through (some internal names use
# them).
_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(rf"^(?:{_LABEL}(?:\.{_LABEL})*|[0-9a-f:.]+)$")


def normalized_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def is_host_pattern(value: str) -> bool:
    """`value` is a hostname or address, or `*.` and a hostname."""
    host = normalized_host(value)
    host = host.removeprefix("*.")
    return bool(host) and len(host) <= 253 and _HOST.fullmatch(host) is not None


def host_matches(pattern: str, host: str) -> bool:
    pattern, host = normalized_host(pattern), normalized_host(host)
    if not host:
        return False
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def any_host_matches(patterns: Iterable[str], host: str) -> bool:
    return any(host_matches(pattern, host) for pattern in patterns)
