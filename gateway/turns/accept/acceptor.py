"""The entry point of accept: a request's message stored at once as a lot of one, background
ones gathered into lots; a replay running concurrently in this process shares the outcome of
the first."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage
from gateway.coordination.dedupe import SeenKeys
from gateway.memory.queue import CompactionQueue
from gateway.runtime.metrics import Metrics
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef
from gateway.turns.accept.accepted import Accepted
from gateway.turns.accept.arrival import Arrival
from gateway.turns.accept.gathering import LotGathering
from gateway.turns.accept.storage import LotStorage
from gateway.turns.accept.writer import LotWriter
from gateway.turns.backpressure import Backpressure


class Acceptor:
    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        writer: LotWriter,
        backpressure: Backpressure,
        metrics: Metrics,
        seen: SeenKeys | None = None,
        memory: CompactionQueue | None = None,
    ) -> None:
        self.backpressure = backpressure
        self.seen = seen
        self.memory = memory
        self._storage = LotStorage(
            sessions=sessions, writer=writer, metrics=metrics, seen=seen, memory=memory
        )
        self._gathering = LotGathering(self._storage.store)
        self._inflight: dict[tuple[str, str], asyncio.Future[Accepted]] = {}

    async def accept(
        self,
        inbound: InboundMessage,
        *,
        tenant: TenantRef = DEFAULT_TENANT,
        background: bool = False,
    ) -> Accepted:
        """Store one inbound message (idempotent on channel + provider message id).

        `background`: called off the request path (the inbox), so it does not count as an
        acknowledgement that background work yields to; background accepts started together
        (before any of them awaits) are stored together, see `gateway.turns.accept`. One that
        raises `ThreadBlocked` was not stored."""
        if background:
            return await self._once(inbound, tenant, self._gathering.join)
        with self.backpressure.ingest_request():
            return await self._once(inbound, tenant, self._store_now)

    async def _store_now(self, inbound: InboundMessage, tenant: TenantRef) -> Accepted:
        arrival = Arrival.of(inbound, tenant)
        await self._storage.store([arrival])
        return arrival.done.result()

    async def _once(
        self,
        inbound: InboundMessage,
        tenant: TenantRef,
        store: Callable[[InboundMessage, TenantRef], Awaitable[Accepted]],
    ) -> Accepted:
        key = (inbound.channel, inbound.provider_message_id)
        running = self._inflight.get(key)
        if running is not None:  # a concurrent replay in this process: share its outcome
            first = await asyncio.shield(running)
            return Accepted(first.message_id, first.customer_id, True, first.conversation_key)
        future: asyncio.Future[Accepted] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            accepted = await store(inbound, tenant)
            future.set_result(accepted)
            return accepted
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so a replay-less failure is not logged twice
            raise
        finally:
            del self._inflight[key]
