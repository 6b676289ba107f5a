"""The fenced store of a reply: in one transaction the writer's fence checked, the reply
appended, its turn's outcome written (with the delivery claim the deliver step handed over)
unless the conversation stopped being the bot's, the episode counted, and the hand-over and
the reply's event recorded."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.coordination.locks import Held
from gateway.reports.reasons import handoff_reason
from gateway.runtime.metrics import Metrics
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import MessageRecord, NewMessage, TurnRecord
from gateway.storage.repositories import conversations, episodes, messages, turns
from gateway.storage.updates import DeliveryClaim, TurnOutcome
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.answer.reply_steps import Draft
from gateway.turns.handoff import OwnerChange, change_owner, message_created
from identity.conversation_owner import AskedForHuman


class StaleWriter(Exception):
    """This process's conversation lock expired and a newer holder already wrote."""


class TakenMeanwhile(Exception):
    """The conversation stopped being the bot's while its reply was written: not stored."""


@dataclass(frozen=True, slots=True)
class StoredReply:
    """The stored reply, and whether another turn of its conversation was pending when it was
    written (the drain reads the next one only then)."""

    message: MessageRecord
    more_pending: bool


class ReplyStore:
    def __init__(self, deps: AnswerDeps, metrics: Metrics | None = None) -> None:
        self._deps = deps
        self._metrics = metrics

    async def mark_human(self, turn: TurnRecord) -> None:
        """A turn of a conversation a person answers: marked so."""
        async with self._deps.work, self._deps.sessions.begin() as session:
            await turns.record_outcome(session, turn.id, TurnOutcome(status="human"))

    async def store(
        self,
        turn: TurnRecord,
        held: Held,
        inbound: MessageRecord,
        draft: Draft,
        claim: DeliveryClaim,
    ) -> StoredReply:
        """Store the reply and its turn's outcome; `draft.handoff` (a reason) also moves the
        conversation to waiting. Raises `TakenMeanwhile` (nothing stored) when the
        conversation stopped being the bot's, `StaleWriter` when a newer lock holder wrote."""
        async with self._deps.work, self._deps.sessions.begin() as session:
            if held.fence is not None and not await turns.claim_fence(
                session, turn.conversation_key, held.fence
            ):
                raise StaleWriter(f"turn {turn.id}: a newer lock holder wrote first")
            reply = await messages.append_message(
                session, self._new_reply(turn, inbound, draft), add_to_episode=False
            )
            outcome = replace(draft.outcome, reply_message_id=reply.id, delivery=claim)
            recorded = await turns.record_outcome_while_bot_owns(
                session, turn.id, turn.conversation_key, outcome
            )
            if not recorded.written:
                raise TakenMeanwhile(turn.conversation_key)
            await episodes.record_message(
                session, turn.episode_id, at=reply.created_at, tokens=reply.token_count
            )
            handed = await self._reply_stored(session, turn, reply, draft.handoff)
        if handed and draft.handoff is not None and self._metrics is not None:
            self._metrics.handoffs.labels(reason=handoff_reason(draft.handoff)).inc()
        return StoredReply(reply, more_pending=recorded.more_pending)

    def _new_reply(self, turn: TurnRecord, inbound: MessageRecord, draft: Draft) -> NewMessage:
        canned = draft.canned
        return NewMessage(
            customer_id=turn.customer_id,
            episode_id=turn.episode_id,
            channel=inbound.channel,
            role="assistant",
            text=draft.text,
            token_count=self._deps.counter.count(draft.text),
            identity_id=inbound.identity_id,
            provider_message_id=f"reply:{inbound.id}",
            thread_key=inbound.thread_key,
            media=draft.attachments,
            meta=MessageMeta(
                in_reply_to=inbound.id, canned=canned or None, citations=draft.citations
            ),
            tenant=turn.tenant,
        )

    async def _reply_stored(
        self, session: AsyncSession, turn: TurnRecord, reply: MessageRecord, handoff: str | None
    ) -> bool:
        """In the reply's transaction: the hand-over to a person, and the reply announced;
        whether the conversation was handed over."""
        events = self._deps.events
        handed = False
        if handoff is None and (events is None or not events.enabled):
            return handed
        conversation = await conversations.by_key(session, turn.conversation_key)
        if conversation is None:
            return handed  # stored before conversations were kept
        if handoff is not None:
            change = await change_owner(
                session,
                events,
                conversation.id,
                AskedForHuman(handoff),
                actor="bot",
                reason=handoff,
            )
            if isinstance(change, OwnerChange):
                conversation = change.conversation
                handed = change.changed
        await message_created(session, events, conversation, reply)
        return handed
