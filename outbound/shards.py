"""One httpx client's requests spread over several connection pools.

httpcore (1.0.9) walks its whole connection list for each idle connection every time a
request starts or ends (`AsyncConnectionPool._assign_requests_to_connections`; encode/httpcore
PR #1035 is the open fix), so a pool holding a few hundred connections — a model call per
conversation in flight, each waiting seconds — spends more CPU on that bookkeeping than on the
calls. Here each request goes to the next of ``shards`` pools in turn: each holds a share of
the connections and pays a square of its share, not of the whole (with 32 pools, a read action
per turn at 50 turns/s cost the gateway 39 ms of CPU per reply before and 30 after, against 28
without the action). A pool's limits are the
whole client's (the callers' own gates bound how many calls run at once); keep-alive equals
the connection limit, because that httpcore count closes idle connections whenever the pool
holds more than the keep-alive limit, busy ones included: a new connection a request under
load.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import httpx

__all__ = ["SHARDS", "ShardedTransport", "kept_alive"]

SHARDS = 32


def kept_alive(max_connections: int) -> httpx.Limits:
    """Limits whose idle connections are kept up to the connection limit itself."""
    return httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)


class ShardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, shards: Sequence[httpx.AsyncBaseTransport]) -> None:
        if not shards:
            raise ValueError("a sharded transport needs at least one shard")
        self.shards = tuple(shards)
        self._next = itertools.cycle(self.shards)

    @classmethod
    def of(
        cls, make: Callable[[], httpx.AsyncBaseTransport], shards: int = SHARDS
    ) -> ShardedTransport:
        return cls([make() for _ in range(shards)])

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await next(self._next).handle_async_request(request)

    async def aclose(self) -> None:
        for shard in self.shards:
            await shard.aclose()
