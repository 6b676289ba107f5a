"""Who is on the other end of a request: the peer, or the client a trusted proxy names.

Behind a reverse proxy every connection comes from the proxy, so a limit or lockout counted
per peer would count every visitor together. `X-Forwarded-For` is believed only when the peer
is one of `RELAYDESK_TRUSTED_PROXIES`: the client is then the right-most address in the
header that is not itself a trusted proxy (the left-most entries are whatever the client
chose to send). `X-Forwarded-Proto` from a trusted peer says whether the client used https.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

from aiohttp import web

from gateway.config import Network
from gateway.keys import SETTINGS

UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Client:
    address: str
    secure: bool


@lru_cache(maxsize=8)
def _networks(trusted: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ip_network(item, strict=False) for item in trusted)


def _parsed(value: str) -> IPv4Address | IPv6Address | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # "[2001:db8::1]:443"
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # "203.0.113.7:51234"
        value = value.split(":", 1)[0]
    try:
        return ip_address(value)
    except ValueError:
        return None


def _is_trusted(address: IPv4Address | IPv6Address | None, trusted: tuple[Network, ...]) -> bool:
    if address is None:
        return False
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in trusted)


def resolve_client(
    peer: str | None,
    *,
    peer_secure: bool,
    forwarded_for: str | None,
    forwarded_proto: str | None,
    trusted: tuple[str, ...],
) -> Client:
    """The client behind `peer` given the forwarding headers it sent (pure)."""
    networks = _networks(trusted)
    peer_address = _parsed(peer) if peer else None
    if not networks or not _is_trusted(peer_address, networks):
        return Client(str(peer_address) if peer_address else (peer or UNKNOWN), peer_secure)
    client = str(peer_address)
    hops = [hop for hop in (forwarded_for or "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _parsed(hop)
        if address is None:
            break  # a garbled entry: the last address we could trust is the answer
        client = str(address)
        if not _is_trusted(address, networks):
            break
    proto = (forwarded_proto or "").split(",")[-1].strip().lower()
    secure = proto == "https" if proto else peer_secure
    return Client(client, secure)


def client_of(request: web.Request) -> Client:
    """The client of this request, by the deployment's trusted proxies."""
    return resolve_client(
        request.remote,
        peer_secure=request.secure,
        forwarded_for=request.headers.get("X-Forwarded-For"),
        forwarded_proto=request.headers.get("X-Forwarded-Proto"),
        trusted=request.app[SETTINGS].trusted_proxies,
    )
