"""The httpx transport of fetches: every connection it opens resolves the host itself, checks
each address against the policy, and connects to a checked address. A name that resolved to a
public address once and to an internal one a moment later (DNS rebinding) is refused on the
connection that would reach it, whatever an earlier check said."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from ipaddress import ip_address

import httpcore
import httpx

from outbound.errors import FetchRefused
from outbound.policy import Address, FetchPolicy, literal_address

# The addresses a host resolves to, in the order to try them.
Resolver = Callable[[str, int], Awaitable[list[Address]]]


async def system_resolver(host: str, port: int) -> list[Address]:
    """The host's addresses from the system resolver (`getaddrinfo`), without repeats."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[Address] = []
    for *_, sockaddr in infos:
        address = ip_address(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


async def checked_addresses(
    policy: FetchPolicy, resolver: Resolver, host: str, port: int, timeout: float | None
) -> list[Address]:
    """What `host` resolves to, every address allowed (`FetchRefused` otherwise); a name that
    does not resolve is an `httpcore.ConnectError`, as any unreachable host."""
    literal = literal_address(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            async with asyncio.timeout(timeout):
                addresses = await resolver(host, port)
        except (OSError, TimeoutError) as exc:
            raise httpcore.ConnectError(f"{host} did not resolve: {exc}") from exc
    policy.check_addresses(host, addresses)
    return addresses


class GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(
        self,
        policy: FetchPolicy,
        resolver: Resolver,
        inner: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await checked_addresses(self._policy, self._resolver, host, port, timeout)
        failure: Exception | None = None
        for address in addresses:
            try:
                # TLS still names the host (httpcore passes it as the server name on its own).
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # checked_addresses never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise FetchRefused("fetches go over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (no proxy from the environment: a proxy would make the addresses
    checked the proxy's), its connection pool on `GuardedBackend`."""

    def __init__(
        self,
        policy: FetchPolicy,
        resolver: Resolver,
        *,
        limits: httpx.Limits,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        # ``tls``: a context several transports share (each new one loads the CA bundle).
        context = tls if tls is not None else httpx.create_ssl_context(trust_env=False)
        super().__init__(verify=context, trust_env=False, limits=limits)
        # httpx offers no way to name the pool's network backend: the same pool, with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy, resolver),
        )
