"""Web origins the widget trusts (`RELAYDESK_WEBCHAT_ALLOWED_ORIGINS`), written exactly as a
browser writes `event.origin`, so the widget can compare them as strings and the page can put
them into its Content-Security-Policy as they are."""

from __future__ import annotations

import re
from typing import Final

# scheme://host[:port] and nothing else: no path, no user, no wildcard, no "null". Nothing here
# can end a CSP directive or an HTML attribute.
_ORIGIN: Final = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])"
    r"(?::(?P<port>[0-9]{1,5}))?",
    re.IGNORECASE,
)
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def web_origin(value: str) -> str:
    """`value` as a browser writes the origin: lower case, without the scheme's default port.
    Raises ValueError for anything that is not an http(s) origin."""
    match = _ORIGIN.fullmatch(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not an origin like https://shop.example.com (scheme://host[:port], "
            "no path)"
        )
    scheme, host = match["scheme"].lower(), match["host"].lower()
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"{value!r} has no valid port")
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"
