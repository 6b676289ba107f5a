"""Each conversation's undelivered replies settled in order, under the conversation's lock.

A reply is undelivered when its delivery is "retry" (a retryable failure, or waiting behind an
earlier reply) or "sending" (its first send is under way, or its sender died: its lease runs
out). Settling takes them oldest first: a live lease stops there (its sender is at it, or it
is in doubt until the lease runs out), and so does a reply that could not go; the ones after
it wait. The answer step settles a conversation before it answers (so a new reply never
overtakes an older one), and `retry` does the rest on every sweep.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from gateway.coordination.locks import ConversationLocks
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import deliveries, messages, turns

if TYPE_CHECKING:
    from gateway.turns.deliver import Deliverer

log = logging.getLogger("relaydesk.deliver")

# Per sweep: conversations looked at, and replies of one conversation per settle.
CONVERSATIONS_PER_SWEEP = 100
REPLIES_PER_SETTLE = 50


class DeliveryOrder:
    def __init__(self, deliverer: Deliverer, locks: ConversationLocks) -> None:
        self._deliverer = deliverer
        self._locks = locks

    async def settle(self, key: str) -> tuple[int, bool]:
        """Send the conversation's undelivered replies, oldest first, until one cannot go
        yet; the caller holds the conversation's lock. Returns (how many were sent or found
        sent, whether none is left waiting)."""
        deliverer = self._deliverer
        settled = 0
        async with deliverer.sessions() as session:
            waiting = await deliveries.undelivered_of(session, key, limit=REPLIES_PER_SETTLE)
        for turn in waiting:
            if turn.delivery_status == "sending" and (
                turn.delivery_lease_until is None or turn.delivery_lease_until > utcnow()
            ):
                return settled, False  # being sent, or in doubt until its lease runs out
            if turn.reply_message_id is None:
                continue
            async with deliverer.sessions() as session:
                inbound = await messages.get_message(
                    session, turn.customer_id, turn.inbound_message_id
                )
                reply = await messages.get_message(session, turn.customer_id, turn.reply_message_id)
            if not await deliverer.send(turn, inbound, reply):
                return settled, False
            settled += 1
        return settled, len(waiting) < REPLIES_PER_SETTLE

    async def retry(self) -> int:
        """Settle every conversation with a reply due again (a retry, a lease run out, a reply
        stored but never handed over), each under its lock; one held elsewhere is left to
        its holder. How many replies were sent or found sent."""
        deliverer = self._deliverer
        async with deliverer.sessions() as session:
            keys = await deliveries.undelivered_conversations(
                session, limit=CONVERSATIONS_PER_SWEEP
            )
        settled = 0
        for key in keys:
            async with deliverer.sessions() as session:
                floor = await turns.current_fence(session, key)
            async with self._locks.try_hold(key, floor=floor) as held:
                if held is None:
                    continue  # its holder settles it before answering
                settled += (await self.settle(key))[0]
        return settled
