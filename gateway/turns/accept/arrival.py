"""An inbound message waiting to be stored, and how its outcome reaches whoever waits."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from channels.base import InboundMessage
from gateway.coordination.dedupe import Sighting
from gateway.runtime.trace_context import TraceCarrier, current_carrier
from gateway.tenant_ref import TenantRef
from gateway.turns.accept.accepted import Accepted, thread_key


@dataclass(frozen=True, slots=True)
class Arrival:
    inbound: InboundMessage
    tenant: TenantRef  # resolved at the edge; every row of the message carries it
    done: asyncio.Future[Accepted]  # settled once with the outcome
    sighting: Sighting = Sighting.UNKNOWN  # what Redis said of its key, once asked
    # The span it arrived under (a request's, the inbox row's): kept with the message, so its
    # turn continues the trace. None when tracing is off.
    trace: TraceCarrier | None = None

    @classmethod
    def of(cls, inbound: InboundMessage, tenant: TenantRef) -> Arrival:
        future = asyncio.get_running_loop().create_future()
        return cls(inbound, tenant, future, trace=current_carrier())

    @property
    def key(self) -> tuple[str, str]:
        return (self.inbound.channel, self.inbound.provider_message_id)

    @property
    def thread(self) -> str:
        return thread_key(self.inbound.channel, self.inbound.sender)

    @property
    def is_edit(self) -> bool:
        return self.inbound.kind == "edit" or self.inbound.edit_of is not None

    def sighted(self, sighting: Sighting) -> Arrival:
        return replace(self, sighting=sighting)

    def settle(self, outcome: Accepted | Exception) -> None:
        """Hand over the outcome, unless the waiter gave up already (cancelled)."""
        if self.done.done():
            return
        if isinstance(outcome, Accepted):
            self.done.set_result(outcome)
        else:
            self.done.set_exception(outcome)
