"""Background accepts gathered into lots: those started together (before any of them awaits)
join one lot, stored by the first to join; lots are stored one after another, in arrival
order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from channels.base import InboundMessage
from gateway.tenant_ref import TenantRef
from gateway.turns.accept.accepted import Accepted
from gateway.turns.accept.arrival import Arrival


class LotGathering:
    def __init__(self, store: Callable[[Sequence[Arrival]], Awaitable[None]]) -> None:
        self._store = store  # stores a lot and settles each of its arrivals
        self._waiting: list[Arrival] = []  # the lot being gathered
        self._lots = asyncio.Lock()

    async def join(self, inbound: InboundMessage, tenant: TenantRef) -> Accepted:
        """Join the lot being gathered; the first to join stores it once the others started
        together with it have joined (one turn of the event loop)."""
        arrival = Arrival.of(inbound, tenant)
        self._waiting.append(arrival)
        if len(self._waiting) == 1:
            await self._lead()
        return await arrival.done

    async def _lead(self) -> None:
        lot: list[Arrival] = []
        try:
            await asyncio.sleep(0)  # the accepts started with this one join meanwhile
            lot, self._waiting = self._waiting, []
            async with self._lots:
                await self._store(lot)
        finally:
            # Cancelled (a shutdown): the lot's transaction rolled back; nobody waits forever.
            for arrival in lot or self._waiting:
                if not arrival.done.done():
                    arrival.done.cancel()
            if not lot:
                self._waiting = []
