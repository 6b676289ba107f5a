"""`SafeFetcher`: the one way the service fetches a URL that someone other than its operator
chose (an attachment, a media marker, a customer's media, a vCard).

A fetch is a GET of http or https only. Every connection is checked by the transport
(`outbound.transport`: the addresses the host resolves to, against `FetchPolicy`); redirects
are followed here, at most `max_redirects`, each hop's URL checked again; credentials go only
to the hosts they name (`HostCredentials`), so a redirect elsewhere goes without them. The body
is read as it arrives and the fetch is abandoned once it passes its kind's cap; the whole
fetch, redirects included, has one deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime

import httpcore
import httpx

from outbound.credentials import HostCredentials
from outbound.errors import FetchFailed, FetchRefused, FetchTooLarge
from outbound.kinds import FetchKind
from outbound.policy import FetchPolicy
from outbound.shards import ShardedTransport, kept_alive
from outbound.transport import GuardedTransport, Resolver, checked_addresses, system_resolver

# Connections the fetcher holds at once (fetches are few beside the model calls).
MAX_CONNECTIONS = 32  # per shard
FETCH_SHARDS = 4
CONNECT_TIMEOUT_S = 5.0
# How long a name may take to resolve when a URL is only vetted (nothing fetched yet).
VET_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Fetched:
    body: bytes
    content_type: str | None
    final_url: str  # after redirects
    status: int = 200  # 304 (empty body) when a conditional fetch found the copy current
    # The validators the answer carried, as sent, for the next conditional fetch.
    etag: str | None = None
    last_modified: str | None = None

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def _retryable(status: int) -> bool:
    return status in (408, 429) or status >= 500


class SafeFetcher:
    def __init__(
        self,
        policy: FetchPolicy,
        *,
        resolver: Resolver = system_resolver,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.policy = policy
        self._resolver = resolver
        self._tls = httpx.create_ssl_context(trust_env=False)  # shared by every pool
        limits = kept_alive(max_connections)
        # Also for requests that are not fetches of a body (the event sender's posts, the
        # model's actions): the same checks on every connection, and no redirect followed.
        # Kept-alive connections spare a business API a handshake a call; each was checked
        # when it connected.
        self.client = httpx.AsyncClient(
            transport=ShardedTransport.of(
                lambda: GuardedTransport(policy, resolver, limits=limits, tls=self._tls),
                FETCH_SHARDS,
            ),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(policy.timeout_s, connect=CONNECT_TIMEOUT_S),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    def own_client(self, *, headers: Mapping[str, str], timeout_s: float) -> httpx.AsyncClient:
        """A client of its own for a library that makes its requests itself (an MCP
        session): the same checks on every connection, no redirect followed, ``headers`` on
        every request. The caller closes it."""
        return httpx.AsyncClient(
            transport=GuardedTransport(
                self.policy,
                self._resolver,
                limits=httpx.Limits(max_connections=4),
                tls=self._tls,
            ),
            headers=dict(headers),
            trust_env=False,
            follow_redirects=False,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
        )

    async def get(
        self,
        url: str,
        *,
        kind: FetchKind,
        credentials: HostCredentials | None = None,
        if_none_match: str | None = None,
        if_modified_since: datetime | None = None,
    ) -> Fetched:
        """The body at `url`; raises `FetchRefused`, `FetchTooLarge` or `FetchFailed`. Given
        the validators of a copy held (its ETag, its Last-Modified), the fetch is conditional:
        an answer of 304 is a `Fetched` with that status and no body."""
        target = self._target(url)
        conditions = _conditions(if_none_match, if_modified_since)
        try:
            async with asyncio.timeout(self.policy.timeout_s):
                return await self._follow(target, kind, credentials, conditions)
        except TimeoutError as exc:
            raise self._late(target) from exc

    async def request(
        self,
        method: str,
        url: str,
        *,
        kind: FetchKind,
        timeout_s: float,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> Fetched:
        """One call that is not a plain fetch (a business action): the same checks of the URL
        and of every connection, within ``timeout_s``, the answer capped by ``kind``. No
        redirect is followed: a write is never sent on to somewhere else. Raises like `get`
        (a redirect is a `FetchFailed` naming its status)."""
        target = self._target(url)
        try:
            async with asyncio.timeout(timeout_s):
                request = self.client.build_request(
                    method,
                    target,
                    headers=headers,
                    params=params,
                    content=content,
                    timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S)),
                )
                response = await self.client.send(request, stream=True)
                try:
                    return await _fetched(response, kind, target)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise FetchFailed(f"{target.host} did not answer within {timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise FetchFailed(f"{target.host} unreachable: {reason}") from exc

    def _late(self, target: httpx.URL) -> FetchFailed:
        return FetchFailed(f"{target.host} did not answer within {self.policy.timeout_s:g} s")

    async def vet(self, url: str) -> None:
        """Refuse now a URL that no fetch would reach (`FetchRefused`): its scheme, or a host
        that is or resolves to a refused address. A name that does not resolve now is a
        `FetchFailed` (a later fetch may still work)."""
        target = self._target(url)
        port = target.port or (443 if target.scheme == "https" else 80)
        try:
            await checked_addresses(self.policy, self._resolver, target.host, port, VET_TIMEOUT_S)
        except httpcore.ConnectError as exc:
            raise FetchFailed(str(exc)) from exc

    def _target(self, url: str) -> httpx.URL:
        try:
            target = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise FetchRefused(f"not a URL: {exc}") from exc
        self.policy.check_target(target.scheme, target.host)
        return target

    async def _follow(
        self,
        target: httpx.URL,
        kind: FetchKind,
        credentials: HostCredentials | None,
        conditions: Mapping[str, str],
    ) -> Fetched:
        for hop in range(self.policy.max_redirects + 1):
            # The body as sent, never compressed: the cap counts what is held in memory.
            headers = {"Accept-Encoding": "identity", **conditions}
            if credentials is not None:
                headers.update(credentials.headers_for(target.host))
            try:
                async with self.client.stream("GET", target, headers=headers) as response:
                    if conditions and response.status_code == 304:
                        return _not_modified(response, target)
                    # A 3xx without a Location (an unasked 304) is an answer: it fails below.
                    if not response.has_redirect_location:
                        return await _fetched(response, kind, target)
                    if hop == self.policy.max_redirects:
                        raise FetchRefused(
                            f"more than {self.policy.max_redirects} redirects from {target.host}"
                        )
                    location = target.join(response.headers["Location"])
            except httpx.TimeoutException as exc:
                raise self._late(target) from exc
            except httpx.HTTPError as exc:
                reason = str(exc) or type(exc).__name__
                raise FetchFailed(f"{target.host} unreachable: {reason}") from exc
            target = self._target(str(location))
        raise AssertionError("unreachable: the last hop returns or raises")


def _conditions(etag: str | None, modified_since: datetime | None) -> dict[str, str]:
    """The conditional headers for a copy with these validators (none: a plain fetch)."""
    conditions: dict[str, str] = {}
    if etag:
        conditions["If-None-Match"] = etag
    if modified_since is not None:
        moment = modified_since if modified_since.tzinfo else modified_since.replace(tzinfo=UTC)
        conditions["If-Modified-Since"] = format_datetime(moment.astimezone(UTC), usegmt=True)
    return conditions


def _not_modified(response: httpx.Response, target: httpx.URL) -> Fetched:
    return Fetched(
        b"",
        response.headers.get("Content-Type"),
        str(target),
        response.status_code,
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
    )


async def _fetched(response: httpx.Response, kind: FetchKind, target: httpx.URL) -> Fetched:
    if not response.is_success:
        raise FetchFailed(
            f"{target.host} answered {response.status_code}",
            status=response.status_code,
            retryable=_retryable(response.status_code),
        )
    body = await _capped_body(response, kind, target.host)
    return Fetched(
        body,
        response.headers.get("Content-Type"),
        str(target),
        response.status_code,
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
    )


async def _capped_body(response: httpx.Response, kind: FetchKind, host: str) -> bytes:
    cap = kind.max_bytes
    too_large = f"{host} sends more than the {cap} bytes a {kind.name.lower()} may take"
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise FetchTooLarge(too_large)
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > cap:
            raise FetchTooLarge(too_large)
    return bytes(body)
