"""Requests spread over the shards' pools in turn, each pool keeping its idle connections."""

from __future__ import annotations

import asyncio

import httpx
from aiohttp import web
from aiohttp.test_utils import TestServer

from outbound.shards import ShardedTransport, kept_alive


async def test_requests_take_the_shards_in_turn_and_reuse_their_connections() -> None:
    peers: list[int] = []

    async def hello(request: web.Request) -> web.Response:
        transport = request.transport
        assert transport is not None
        peers.append(transport.get_extra_info("peername")[1])
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", hello)
    server = TestServer(app)
    await server.start_server()
    shards = [httpx.AsyncHTTPTransport(limits=kept_alive(8)) for _ in range(3)]
    try:
        async with httpx.AsyncClient(transport=ShardedTransport(shards)) as client:
            url = str(server.make_url("/"))
            for _ in range(9):
                assert (await client.get(url)).text == "ok"
            # Three pools, each reused: three connections for nine requests.
            assert len(set(peers)) == 3
            assert peers[:3] == peers[3:6] == peers[6:9]
            # At once, more requests than a pool's keep-alive default: none is closed after.
            await asyncio.gather(*(client.get(url) for _ in range(24)))
            before = len(set(peers))
            await asyncio.gather(*(client.get(url) for _ in range(24)))
            assert len(set(peers)) == before  # every one reused a kept-alive connection
    finally:
        await server.close()


def test_keep_alive_is_the_connection_limit() -> None:
    limits = kept_alive(40)
    assert limits.max_connections == limits.max_keepalive_connections == 40
