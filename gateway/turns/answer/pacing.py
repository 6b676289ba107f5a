"""Pacing of a customer's model calls: at most the tenant's
`rate_limits.model_calls_per_customer`, counted across channels and processes (the limiter of
`gateway.rate_limits`).

A customer's message is never refused for it: a provider retries a refused webhook, and a web
chat message is already stored when it is counted. When a turn would call the model past the
limit, the drain waits (holding the conversation) until the window lets one more call through,
then answers the messages waiting by then together: the turns before the newest are marked
"batched" (their offline facts stored; the summary model reads them with the episode), and the
newest is answered as usual, its window holding every one of them. A burst of 100 messages thus
costs at most the limit's calls per window, and every message is answered.

A waiting turn that needs a step of its own stops the batch there and is answered in order: a
customer asking for a person, a voice note or a shared contact to read first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from gateway.rate_limits.limiter import ALLOWED, Door, RateLimiter, Verdict
from gateway.storage.records import PendingTurn
from gateway.tenants import TenantSettings
from gateway.turns.answer.routing import Route, route_turn
from gateway.turns.contact_cards import is_contact_card
from gateway.turns.voice_notes import is_voice_note

# The waiting turns one reply answers at most (the window holds far fewer words anyway).
BATCH_LIMIT = 400
# Past the window's reset, so the next count falls outside it despite clock rounding.
_SLACK_S = 0.01


class ModelPacing:
    """`limiter` None: no pacing (every turn is answered on its own)."""

    def __init__(self, limiter: RateLimiter | None = None) -> None:
        self._limiter = limiter

    async def admit(self, pending: PendingTurn, tenant: TenantSettings) -> Verdict:
        """Count one model call for the turn's customer; refused past the limit."""
        if self._limiter is None:
            return ALLOWED
        return await self._limiter.hit(
            Door.MODEL_CALLS,
            tenant.rate_limits.model_calls_per_customer,
            pending.turn.tenant.domain,
            pending.turn.customer_id,
        )

    async def wait_for_call(
        self, pending: PendingTurn, tenant: TenantSettings, refused: Verdict
    ) -> None:
        """Wait until the customer's limit lets one more call through (it is then counted)."""
        verdict = refused
        while not verdict.allowed:
            await asyncio.sleep(verdict.wait_s + _SLACK_S)
            verdict = await self.admit(pending, tenant)


def answered_together(
    waiting: Sequence[PendingTurn], handoff_phrases: Iterable[str]
) -> list[PendingTurn]:
    """The waiting turns (in order) that the reply to a later one answers: those before the
    newest, from the oldest, up to the first that needs a step of its own."""
    phrases = tuple(handoff_phrases)
    together = []
    for pending in waiting[:-1]:
        inbound = pending.inbound
        if route_turn(pending.owner, inbound.text, phrases).route is not Route.ANSWER:
            break
        if is_voice_note(inbound) or is_contact_card(inbound):
            break
        together.append(pending)
    return together
