"""Where a server-side fetch may go (pure: no I/O).

Only http and https. Every address a host resolves to must be public: loopback, private
(RFC 1918, fc00::/7), link-local (169.254/16 with the cloud metadata services, fe80::/10),
shared (100.64/10), unspecified, multicast and reserved addresses are refused, and so is an
IPv4 address wrapped in IPv6 (mapped, NAT64, 6to4, Teredo) that is one of them. One such
address among public ones refuses the host: which one a connection gets is not ours to choose.

The deployment's allowlist (`RELAYDESK_FETCH_ALLOW`) lets through what it runs inside:
hostnames (any address they resolve to) and networks (addresses inside them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)

from context.host_patterns import any_host_matches, is_host_pattern, normalized_host
from outbound.errors import FetchRefused

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

SCHEMES = ("http", "https")
MAX_REDIRECTS = 3
TOTAL_TIMEOUT_S = 20.0
_SHARED = IPv4Network("100.64.0.0/10")
_NAT64 = IPv6Network("64:ff9b::/96")


def _embedded_ipv4(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries to (mapped, NAT64, 6to4, Teredo client)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def blocked_reason(address: Address) -> str | None:
    """Why a fetch must not reach `address` (None: a public address)."""
    if isinstance(address, IPv6Address):
        inner = _embedded_ipv4(address)
        if inner is not None:
            reason = blocked_reason(inner)
            return f"{reason} wrapped in IPv6" if reason else None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


def parse_allow(entries: Iterable[str]) -> tuple[tuple[str, ...], tuple[Network, ...]]:
    """The hostnames and the networks of an allowlist; `ValueError` names a bad entry."""
    hosts: list[str] = []
    networks: list[Network] = []
    for entry in entries:
        try:
            networks.append(ip_network(entry.strip(), strict=False))
            continue
        except ValueError:
            pass
        if not is_host_pattern(entry):
            raise ValueError(f"{entry!r} is not a hostname, an address or a CIDR network")
        hosts.append(normalized_host(entry))
    return tuple(hosts), tuple(networks)


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    allow_hosts: tuple[str, ...] = ()
    allow_networks: tuple[Network, ...] = ()
    max_redirects: int = MAX_REDIRECTS
    timeout_s: float = TOTAL_TIMEOUT_S

    @classmethod
    def allowing(
        cls,
        entries: Iterable[str] = (),
        *,
        max_redirects: int = MAX_REDIRECTS,
        timeout_s: float = TOTAL_TIMEOUT_S,
    ) -> FetchPolicy:
        hosts, networks = parse_allow(entries)
        return cls(hosts, networks, max_redirects, timeout_s)

    def check_target(self, scheme: str, host: str) -> None:
        """A URL's scheme and host, before anything is resolved."""
        if scheme.lower() not in SCHEMES:
            raise FetchRefused(f"only http and https URLs are fetched, not {scheme or 'none'!r}")
        if not normalized_host(host):
            raise FetchRefused("the URL names no host")

    def check_addresses(self, host: str, addresses: Sequence[Address]) -> None:
        """Every address `host` resolved to may be reached, or `FetchRefused` says why not."""
        if any_host_matches(self.allow_hosts, host):
            return
        if not addresses:
            raise FetchRefused(f"{host} resolved to no address")
        for address in addresses:
            if self._listed(address):
                continue
            reason = blocked_reason(address)
            if reason is not None:
                shown = host if literal_address(host) == address else f"{host} ({address})"
                raise FetchRefused(
                    f"{shown} is {reason}; a deployment lists hosts it runs itself in "
                    "RELAYDESK_FETCH_ALLOW"
                )

    def _listed(self, address: Address) -> bool:
        mapped = address.ipv4_mapped if isinstance(address, IPv6Address) else None
        return any(
            address in network or (mapped is not None and mapped in network)
            for network in self.allow_networks
        )


def literal_address(host: str) -> Address | None:
    """`host` as an address when it is written as one (brackets of IPv6 URLs dropped)."""
    try:
        return ip_address(host.strip("[]"))
    except ValueError:
        return None
