"""The guarded fetcher against real local servers: internal addresses refused on every
connection (a name's answers checked each time it is connected to) and on every redirect, at
most three redirects, credentials only to their hosts, a body abandoned past its kind's cap,
one deadline for the whole fetch."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from ipaddress import ip_address

import pytest
from aiohttp import web

from devtools.loopback import serving_on_loopback
from outbound import (
    FetchFailed,
    FetchKind,
    FetchPolicy,
    FetchRefused,
    FetchTooLarge,
    HostCredentials,
    SafeFetcher,
)
from outbound.kinds import MIB
from outbound.policy import Address

PUBLIC = ip_address("93.184.216.34")
CHUNK = b"x" * (64 * 1024)


@dataclass
class Site:
    """A server with a file, a secret, redirects, a huge body and a stall; `hits` counts each
    path's requests, `authorizations` the `Authorization` each request carried."""

    hits: dict[str, int] = field(default_factory=dict)
    authorizations: list[tuple[str, str | None]] = field(default_factory=list)
    big_written: int = 0
    big_done: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # the stall ends

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/file", self.file)
        app.router.add_get("/secret", self.file)
        app.router.add_get("/missing", self.missing)
        app.router.add_get("/busy", self.busy)
        app.router.add_get("/to", self.redirect)
        app.router.add_get("/hop/{left}", self.hop)
        app.router.add_get("/big/{mib}", self.big)
        app.router.add_get("/declared", self.declared)
        app.router.add_get("/stall", self.stall)
        return app

    def _seen(self, request: web.Request) -> None:
        self.hits[request.path] = self.hits.get(request.path, 0) + 1
        self.authorizations.append((request.host, request.headers.get("Authorization")))

    async def file(self, request: web.Request) -> web.Response:
        self._seen(request)
        # A new connection for every fetch: each is checked as it is opened.
        return web.Response(text="BEGIN:VCARD", headers={"Connection": "close"})

    async def missing(self, request: web.Request) -> web.Response:
        self._seen(request)
        return web.Response(status=404)

    async def busy(self, request: web.Request) -> web.Response:
        self._seen(request)
        return web.Response(status=503)

    async def redirect(self, request: web.Request) -> web.Response:
        self._seen(request)
        raise web.HTTPFound(request.query["url"])

    async def hop(self, request: web.Request) -> web.Response:
        self._seen(request)
        left = int(request.match_info["left"])
        if left == 0:
            return web.Response(text="arrived")
        raise web.HTTPFound(f"/hop/{left - 1}")

    async def big(self, request: web.Request) -> web.StreamResponse:
        """`mib` MiB in chunks, without a length; `big_written` counts what went out."""
        self._seen(request)
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            for _ in range(int(request.match_info["mib"]) * 16):
                await response.write(CHUNK)
                self.big_written += len(CHUNK)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.big_done.set()
        return response

    async def declared(self, request: web.Request) -> web.StreamResponse:
        self._seen(request)
        response = web.StreamResponse()
        response.content_length = 100 * MIB
        await response.prepare(request)
        await response.write(CHUNK)
        return response

    async def stall(self, request: web.Request) -> web.Response:
        self._seen(request)
        await asyncio.wait_for(self.released.wait(), 30)
        return web.Response(text="late")


@pytest.fixture
async def site() -> AsyncIterator[tuple[Site, str]]:
    served = Site()
    async with serving_on_loopback(served.app()) as root:
        try:
            yield served, root
        finally:
            served.released.set()


def _port(root: str) -> int:
    return int(root.rsplit(":", 1)[1])


class Resolver:
    """Names to the addresses they resolve to, one answer list per lookup in turn (the last
    repeated); a name it does not know does not resolve."""

    def __init__(self, **answers: list[list[str]]) -> None:
        self._answers = {name.replace("_", "."): iter(lists) for name, lists in answers.items()}
        self._last: dict[str, list[Address]] = {}
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[Address]:
        self.lookups.append(host)
        if host not in self._answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        answer = next(self._answers[host], None)
        if answer is not None:
            self._last[host] = [ip_address(a) for a in answer]
        return self._last[host]


async def test_an_internal_url_is_refused_before_any_request(site: tuple[Site, str]) -> None:
    served, root = site
    fetcher = SafeFetcher(FetchPolicy())
    try:
        for url in (f"{root}/secret", f"http://localhost:{_port(root)}/secret"):
            with pytest.raises(FetchRefused, match="loopback"):
                await fetcher.get(url, kind=FetchKind.ATTACHMENT)
        with pytest.raises(FetchRefused, match="only http and https"):
            await fetcher.get("file:///etc/passwd", kind=FetchKind.ATTACHMENT)
    finally:
        await fetcher.aclose()
    assert served.hits == {}


async def test_a_listed_network_is_fetched(site: tuple[Site, str]) -> None:
    served, root = site
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.0/8"]))
    try:
        fetched = await fetcher.get(f"{root}/file", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert fetched.body == b"BEGIN:VCARD"
    assert fetched.content_type is not None and fetched.content_type.startswith("text/plain")
    assert fetched.final_url == f"{root}/file"
    assert served.hits == {"/file": 1}


async def test_a_name_with_one_internal_address_among_public_ones_is_never_connected_to(
    site: tuple[Site, str],
) -> None:
    served, root = site
    resolver = Resolver(files_example=[[str(PUBLIC), "127.0.0.1"]])
    fetcher = SafeFetcher(FetchPolicy(), resolver=resolver)
    try:
        with pytest.raises(FetchRefused, match=r"files\.example \(127\.0\.0\.1\) is a loopback"):
            await fetcher.get(f"http://files.example:{_port(root)}/file", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert resolver.lookups == ["files.example"]
    assert served.hits == {}


async def test_each_connection_checks_the_name_again(site: tuple[Site, str]) -> None:
    """DNS rebinding: the name passed once, then answers an internal address; the connection
    that would reach it is refused."""
    served, root = site
    resolver = Resolver(rebind_example=[["127.0.0.1"], ["127.0.0.2"]])
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]), resolver=resolver)
    url = f"http://rebind.example:{_port(root)}/file"
    try:
        first = await fetcher.get(url, kind=FetchKind.VCARD)
        with pytest.raises(FetchRefused, match="127.0.0.2"):
            await fetcher.get(url, kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert first.body == b"BEGIN:VCARD"
    assert resolver.lookups == ["rebind.example", "rebind.example"]
    assert served.hits == {"/file": 1}


async def test_a_redirect_to_an_internal_address_is_refused(site: tuple[Site, str]) -> None:
    served, root = site
    port = _port(root)
    resolver = Resolver(media_example=[["127.0.0.1"]], localhost=[["127.0.0.1"]])
    # Only the name is listed: the loopback address itself is not.
    fetcher = SafeFetcher(FetchPolicy.allowing(["media.example"]), resolver=resolver)
    allowed = f"http://media.example:{port}"
    try:
        assert (await fetcher.get(f"{allowed}/file", kind=FetchKind.VCARD)).body
        for target in (f"{root}/secret", f"http://localhost:{port}/secret", "ftp://media.example/"):
            with pytest.raises(FetchRefused):
                await fetcher.get(f"{allowed}/to?url={target}", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert "/secret" not in served.hits
    assert served.hits["/to"] == 3


async def test_at_most_three_redirects_are_followed(site: tuple[Site, str]) -> None:
    served, root = site
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        arrived = await fetcher.get(f"{root}/hop/3", kind=FetchKind.VCARD)
        with pytest.raises(FetchRefused, match="more than 3 redirects"):
            await fetcher.get(f"{root}/hop/4", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert (arrived.body, arrived.final_url) == (b"arrived", f"{root}/hop/0")
    assert served.hits["/hop/0"] == 1  # the fourth redirect was never followed


async def test_credentials_go_to_their_hosts_only(site: tuple[Site, str]) -> None:
    served, root = site
    port = _port(root)
    resolver = Resolver(api_provider_example=[["127.0.0.1"]], cdn_example=[["127.0.0.1"]])
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]), resolver=resolver)
    credentials = HostCredentials.basic("AC1", "token", ("*.provider.example",))
    provider, other = f"http://api.provider.example:{port}", f"http://cdn.example:{port}"
    try:
        await fetcher.get(f"{provider}/file", kind=FetchKind.VCARD, credentials=credentials)
        await fetcher.get(f"{other}/file", kind=FetchKind.VCARD, credentials=credentials)
        redirected = f"{provider}/to?url={other}/file"
        await fetcher.get(redirected, kind=FetchKind.VCARD, credentials=credentials)
    finally:
        await fetcher.aclose()
    basic = credentials.authorization
    assert served.authorizations == [
        (f"api.provider.example:{port}", basic),
        (f"cdn.example:{port}", None),
        (f"api.provider.example:{port}", basic),
        (f"cdn.example:{port}", None),  # the redirect elsewhere went without them
    ]
    assert "token" not in repr(credentials)


@pytest.mark.parametrize(("kind", "mib"), [(FetchKind.ATTACHMENT, 60), (FetchKind.VCARD, 40)])
async def test_a_body_past_its_cap_is_abandoned(
    site: tuple[Site, str], kind: FetchKind, mib: int
) -> None:
    served, root = site
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        with pytest.raises(FetchTooLarge, match=f"more than the {kind.max_bytes} bytes"):
            await fetcher.get(f"{root}/big/{mib}", kind=kind)
        await asyncio.wait_for(served.big_done.wait(), 30)
        with pytest.raises(FetchTooLarge):
            await fetcher.get(f"{root}/declared", kind=kind)  # its length says so: not read
    finally:
        await fetcher.aclose()
    # Read up to the cap and a chunk; what else went out sat in the sockets' buffers.
    assert served.big_written < kind.max_bytes + 12 * MIB < mib * MIB


async def test_one_deadline_for_the_whole_fetch(site: tuple[Site, str]) -> None:
    served, root = site
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"], timeout_s=0.5))
    try:
        with pytest.raises(FetchFailed, match="did not answer within 0.5 s") as failed:
            await fetcher.get(f"{root}/stall", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert failed.value.retryable
    assert served.hits == {"/stall": 1}


async def test_an_answer_that_is_not_2xx_fails_with_its_status(site: tuple[Site, str]) -> None:
    _, root = site
    fetcher = SafeFetcher(FetchPolicy.allowing(["127.0.0.1"]))
    try:
        with pytest.raises(FetchFailed) as missing:
            await fetcher.get(f"{root}/missing", kind=FetchKind.VCARD)
        with pytest.raises(FetchFailed) as busy:
            await fetcher.get(f"{root}/busy", kind=FetchKind.VCARD)
    finally:
        await fetcher.aclose()
    assert (missing.value.status, missing.value.retryable) == (404, False)
    assert (busy.value.status, busy.value.retryable) == (503, True)


async def test_vetting_refuses_what_no_fetch_would_reach() -> None:
    resolver = Resolver(intranet_example=[["10.0.0.8"]], cdn_example=[[str(PUBLIC)]])
    fetcher = SafeFetcher(FetchPolicy(), resolver=resolver)
    try:
        for url in (
            "http://127.0.0.1:8080/secret",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:10.0.0.1]/",
            "https://intranet.example/report.pdf",
            "ftp://cdn.example/catalogue.pdf",
        ):
            with pytest.raises(FetchRefused):
                await fetcher.vet(url)
        await fetcher.vet("https://cdn.example/catalogue.pdf")
        with pytest.raises(FetchFailed, match="did not resolve"):
            await fetcher.vet("https://gone.example/catalogue.pdf")
    finally:
        await fetcher.aclose()
