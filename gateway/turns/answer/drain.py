"""The drain: one conversation's pending turns, one at a time, in arrival order, under its
lock; each turn routed (answered, left to a person, or handed over) and its steps run; past the
customer's model-call limit, the waiting turns answered together (`pacing.py`)."""

from __future__ import annotations

from gateway.coordination.locks import ConversationLocks, Held
from gateway.memory.message_facts import store_message_facts
from gateway.rate_limits.limiter import ALLOWED
from gateway.runtime.trace_context import TURN_ANSWER_SPAN, TraceCarrier, continued_span
from gateway.storage.message_meta import CANNED_HANDOFF
from gateway.storage.records import MessageRecord, PendingTurn
from gateway.storage.repositories import messages, turns
from gateway.storage.updates import TurnOutcome
from gateway.tenants import TenantSettings
from gateway.turns.answer.canned_texts import handoff_text
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.answer.pacing import BATCH_LIMIT, ModelPacing, answered_together
from gateway.turns.answer.preparation import Prepared
from gateway.turns.answer.reply_steps import Draft, ReplyTurn, run_reply_steps
from gateway.turns.answer.routing import Route, route_turn
from gateway.turns.answer.steps import AnswerSteps
from gateway.turns.answer.store import StaleWriter, TakenMeanwhile
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
from gateway.turns.typing import Typing


class Answerer:
    def __init__(
        self,
        deps: AnswerDeps,
        steps: AnswerSteps,
        *,
        locks: ConversationLocks,
        backpressure: Backpressure,
        deliverer: Deliverer,
        pacing: ModelPacing | None = None,
    ) -> None:
        self.deps = deps
        self.pacing = pacing if pacing is not None else ModelPacing()
        self.locks = locks
        self.backpressure = backpressure
        self.deliverer = deliverer
        self.model_facts = steps.model_facts
        self.preparation = steps.preparation
        self.model_call = steps.model_call
        self.reply_steps = steps.reply_steps
        self.store = steps.store
        self.compaction = steps.compaction

    async def drain(self, key: str) -> int:
        """Answer the conversation's pending turns in order; returns how many were answered.

        The lock is taken only when a turn is waiting (a kick for a turn already answered costs
        one query) and nobody holds it. After letting it go the drain looks again when another
        drain sought the lock meanwhile (it left its turn to this one) or that is not known; a
        turn this process stored meanwhile makes the scheduler run the drain again."""
        answered = 0
        while True:
            async with self.deps.work, self.deps.reads() as session:
                check = await turns.drain_check(session, key)
            if not check.pending:
                return answered
            async with self.locks.try_hold(key, floor=check.fence) as held:
                if held is None:
                    return answered  # another drain holds it and answers what is pending
                if check.undelivered:
                    await self._settle_earlier_replies(key)
                answered += await self._drain_held(key, held)
            if not held.sought.meanwhile:
                return answered  # nothing was pending at its last read under the lock

    async def _settle_earlier_replies(self, key: str) -> None:
        """The conversation's earlier replies still to be delivered go first; while one
        cannot go yet, the replies of this drain wait behind it (`delivery_order.py`)."""
        await self.deliverer.flush(key)  # an operator's message this process is sending
        _, clear = await self.deliverer.order.settle(key)
        if not clear:
            self.deliverer.hold_back(key)

    async def pending_conversations(self) -> list[str]:
        async with self.deps.reads() as session:
            return await turns.pending_conversations(session)

    async def _drain_held(self, key: str, held: Held) -> int:
        answered = 0
        admitted = False  # the pacing let a model call through after a wait; not yet made
        batched: tuple[TraceCarrier, ...] = ()  # the messages the next reply answers too
        try:
            while True:
                await self.backpressure.yield_to_ingest()
                async with self.deps.work:
                    async with self.deps.reads() as session:
                        pending = await turns.next_pending_turn(session, key)
                        if pending is None:
                            return answered
                        inbound = pending.inbound
                        tenant = await self.deps.tenant_cache.for_tenant(
                            session, pending.turn.tenant, channel=inbound.channel
                        )
                    routing = route_turn(pending.owner, inbound.text, tenant.handoff_phrases)
                    ready: Prepared | None = None
                    paced = ALLOWED
                    if routing.route is not Route.ANSWER:
                        await self.preparation.store_facts(pending, tenant)
                    else:
                        if not admitted:
                            paced = await self.pacing.admit(pending, tenant)
                        admitted = False
                        if paced.allowed and not self.preparation.waits(pending, tenant):
                            ready = await self.preparation.prepare(pending)
                if not paced.allowed:
                    # Past the customer's model-call limit: once the window lets one more
                    # through, the turns waiting by then are answered by one reply.
                    await self.pacing.wait_for_call(pending, tenant, paced)
                    marked, batched = await self._batch(key, held, tenant)
                    answered += marked
                    admitted = True
                    continue
                more_pending = True  # unless the stored reply tells otherwise
                # The model's call and the channel's send join the message's trace.
                with continued_span(
                    TURN_ANSWER_SPAN,
                    inbound.meta.trace,
                    links=batched,
                    attributes={
                        "relaydesk.turn": pending.turn.id,
                        "relaydesk.route": routing.route.value,
                    },
                ):
                    if routing.route is Route.LEAVE_TO_HUMAN:
                        await self._leave_to_human(pending, tenant)
                    elif routing.route is Route.HAND_OVER:
                        more_pending = await self._hand_over(pending, tenant, held, routing.reason)
                    else:
                        if ready is None:
                            ready = await self.preparation.prepare_after_waiting(pending, tenant)
                        more_pending = await self._answer(pending, ready, held)
                batched = ()
                answered += 1
                if not more_pending:
                    # Nothing else was pending when the reply was written: no read for it; a
                    # turn stored since is found by the drain's check after the lock goes.
                    return answered
        finally:
            # The last message's model facts are stored before the lock is let go: the next
            # holder's window shows them.
            await self.model_facts.settle(key)
            # The replies leave before the lock does: a next holder never overtakes them.
            await self.deliverer.flush(key)

    async def _batch(
        self, key: str, held: Held, tenant: TenantSettings
    ) -> tuple[int, tuple[TraceCarrier, ...]]:
        """Mark the waiting turns that the next reply answers together (`pacing.py`), their
        offline facts stored; the summary model reads them with the episode, not one by one.
        How many were marked, and their messages' trace contexts (the reply links them)."""
        async with self.deps.work, self.deps.sessions.begin() as session:
            waiting = await turns.pending_turns(session, key, limit=BATCH_LIMIT)
            together = answered_together(waiting, tenant.handoff_phrases)
            if not together:
                return 0, ()
            if held.fence is not None and not await turns.claim_fence(session, key, held.fence):
                raise StaleWriter(f"{key}: a newer lock holder wrote first")
            for pending in together:
                await store_message_facts(session, pending.inbound, pending.inbound.text)
            marked = await turns.mark_batched(session, [pending.turn.id for pending in together])
        traces = (pending.inbound.meta.trace for pending in together)
        return marked, tuple(trace for trace in traces if trace is not None)

    async def _leave_to_human(self, pending: PendingTurn, tenant: TenantSettings) -> None:
        """A turn of a conversation a person answers: marked so, nothing sent."""
        await self.store.mark_human(pending.turn)
        await self.compaction.after_turn(pending.turn, tenant)

    async def _hand_over(
        self, pending: PendingTurn, tenant: TenantSettings, held: Held, reason: str | None
    ) -> bool:
        """Move the conversation to waiting and tell the customer (the tenant's text), in the
        transaction that stores the reply; whether another turn was pending then."""
        turn, inbound = pending.turn, pending.inbound
        texts = () if tenant.handoff_message is not None else await self._customer_texts(inbound)
        notice = Draft(
            handoff_text(tenant, texts), TurnOutcome(status="done"), CANNED_HANDOFF, handoff=reason
        )
        stored = await self.store.store(turn, held, inbound, notice, self.deliverer.claim())
        self.deliverer.send_in_order(
            turn.conversation_key, turn, inbound, stored.message, window=pending.window
        )
        await self.compaction.after_turn(turn, tenant)
        return stored.more_pending

    async def _customer_texts(self, inbound: MessageRecord) -> tuple[str, ...]:
        """The customer's latest messages of the episode, this one last: the language the
        built-in handoff text is chosen in (a handoff is rare; one short read)."""
        async with self.deps.sessions() as session:
            earlier = await messages.recent_messages(
                session, inbound.customer_id, inbound.episode_id, limit=6, before_id=inbound.id
            )
        return (*(m.text for m in earlier if m.role == "user"), inbound.text)

    async def _answer(self, pending: PendingTurn, ready: Prepared, held: Held) -> bool:
        """The model's draft through the reply steps, stored and handed to the deliver step;
        the typing signal shows until the reply is sent (or will not be). Whether another turn
        of the conversation was pending when the reply was stored."""
        turn, inbound = pending.turn, pending.inbound
        reply_turn = ReplyTurn(pending, ready.tenant, ready.assembled)
        adapter = self.deps.adapters.get(inbound.channel)
        recipient = inbound.sender.sender if inbound.sender is not None else ""
        typing = Typing(adapter, recipient, inbound.provider_message_id)
        typing.start()
        try:
            draft = await self.model_call.draft(reply_turn, typing)
            draft = await run_reply_steps(self.reply_steps, draft, reply_turn)
            # The reply is stored with its delivery lease taken: sending needs no claim.
            stored = await self.store.store(turn, held, inbound, draft, self.deliverer.claim())
        except TakenMeanwhile:
            typing.stop()
            await self._leave_to_human(pending, ready.tenant)
            return True
        except BaseException:
            typing.stop()
            raise
        self.deliverer.send_in_order(
            turn.conversation_key,
            turn,
            inbound,
            stored.message,
            before_send=typing.stop,
            window=pending.window,
        )
        await self.compaction.after_reply(
            turn, ready.tenant, ready.assembled.unsummarized_tokens, inbound, stored.message
        )
        return stored.more_pending
