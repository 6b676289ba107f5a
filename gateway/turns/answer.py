"""Answer: one conversation's pending turns, one at a time, in arrival order.

Under the conversation lock (in-process, or Redis with a fencing token): the window assembled
for the sender's identity as it was when the message arrived, the model called (the tenant's
fallback text when it fails), the reply stored with its usage and budget report — refused if a
newer lock holder wrote — and handed to the deliver step; compaction queued once the episode
passes its high-water mark.

A model call is a wait, not work: many conversations answer at once, their model calls admitted
by the `ModelGate` (process, provider and tenant limits), while the steps that use the CPU and
the database (reading the turn, assembling the window, storing the reply) take one of a few
`work_slots`. The customer sees a typing signal while the model works, and a channel that can
show a reply as it is written (web chat) gets it streamed; only the finished reply is stored.
The reply is sent in the background, in order, while the next turn is answered.

While the conversation is not the bot's (an operator holds it, or a human was asked for) a
turn is not answered: its message's facts are stored and memory compacted as usual, the turn
marked "human", and no model is called, no typing shown, nothing sent. A customer asking for a
person (the tenant's phrases), a second failed model call in a row (the tenant's count) or the
model's handoff marker move a bot conversation to waiting, and the customer is told so (the
tenant's text, a canned reply). The owner is read with the turn; the reply's own UPDATE checks
it is still the bot's, so a conversation taken while its model was answering sends nothing.

Several processes may answer: a drain takes the conversation's lock only if it is free (the
holder answers what is pending) and looks once more after letting it go, so a turn stored while
it held the lock is never left waiting for the sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, Media
from context import ChatMessage, TokenCounter
from context.reply_attachments import split_attachments
from gateway.coordination.locks import ConversationLocks, Held
from gateway.customers.resolve import ResolvedIdentity
from gateway.events.outbox import EventOutbox
from gateway.memory.background_facts import BackgroundFacts
from gateway.memory.llm_compactor import CompactorFactory
from gateway.memory.message_facts import store_message_facts
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.memory.recall import RecallCache
from gateway.providers import FALLBACK_MESSAGE, ProviderError
from gateway.providers.base import Completion, ModelProvider
from gateway.providers.limits import CallLimits, ModelGate
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import Transcriber
from gateway.runtime.clock import utcnow
from gateway.storage.errors import RecordNotFound
from gateway.storage.message_meta import (
    CANNED_FALLBACK,
    CANNED_HANDOFF,
    CANNED_OFFLINE,
    MessageMeta,
)
from gateway.storage.records import (
    MessageRecord,
    NewMessage,
    PendingTurn,
    TurnRecord,
)
from gateway.storage.repositories import (
    conversations,
    episodes,
    messages,
    summaries,
    tenants,
    turns,
)
from gateway.tenant_ref import TenantRef
from gateway.tenants import TenantSettings
from gateway.turns.backpressure import Backpressure
from gateway.turns.contact_cards import is_contact_card, read_contact_card
from gateway.turns.deliver import DELIVERY_LEASE, Deliverer
from gateway.turns.handoff import OwnerChange, change_owner, message_created
from gateway.turns.preview import Preview
from gateway.turns.typing import Typing
from gateway.turns.voice_notes import heard_message, is_voice_note
from gateway.turns.window import AssembledContext, assemble_context, budget_for
from identity import ChannelIdentityKey, LinkLevel
from identity.conversation_owner import AskedForHuman, Owner, asks_for_human, strip_marker

log = logging.getLogger("relaydesk.answer")

# Steps that use the CPU and the database at once in a process (a model wait holds none).
WORK_SLOTS = 4


@dataclass(frozen=True, slots=True)
class _Prepared:
    """What a turn's model call needs: the tenant's settings and the assembled window."""

    tenant: TenantSettings
    assembled: AssembledContext


class StaleWriter(Exception):
    """This process's conversation lock expired and a newer holder already wrote."""


class _TakenMeanwhile(Exception):
    """The conversation stopped being the bot's while its reply was written: not stored."""


# Why a conversation is handed to a human (the audit's reason and the events').
ASKED_BY_CUSTOMER = "the customer asked for a person"
MODEL_FAILED = "the model failed repeatedly"
MODEL_MARKER = "the model asked for a person"


class Answerer:
    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        counter: TokenCounter,
        locks: ConversationLocks,
        providers: ProviderPool,
        tenant_cache: tenants.SettingsCache,
        recall_cache: RecallCache,
        backpressure: Backpressure,
        deliverer: Deliverer,
        adapters: Mapping[str, Channel],
        memory: CompactionQueue | None = None,
        transcriber: Transcriber | None = None,
        gate: ModelGate | None = None,
        work_slots: int = WORK_SLOTS,
        message_facts_for: CompactorFactory | None = None,
        events: EventOutbox | None = None,
    ) -> None:
        self.sessions = sessions
        self.events = events
        self.counter = counter
        self.locks = locks
        self.providers = providers
        self.tenant_cache = tenant_cache
        self.recall_cache = recall_cache
        self.backpressure = backpressure
        self.deliverer = deliverer
        self.adapters = adapters
        self.memory = memory
        self.transcriber = transcriber
        self.gate = gate or ModelGate()
        self.work = asyncio.Semaphore(work_slots)
        # The summary model's facts of each customer message, found while its turn is answered.
        self.model_facts = BackgroundFacts(
            sessions=sessions, extractor_for=message_facts_for, gate=self.gate, work=self.work
        )

    async def drain(self, key: str) -> int:
        """Answer the conversation's pending turns in order; returns how many were answered.

        The lock is taken only when a turn is waiting (a kick for a turn already answered costs
        one query) and nobody holds it; after letting it go the drain looks again."""
        answered = 0
        while True:
            async with self.work, self.sessions() as session:
                waiting, floor = await turns.pending_and_fence(session, key)
            if not waiting:
                return answered
            async with self.locks.try_hold(key, floor=floor) as held:
                if held is None:
                    return answered  # another drain holds it and answers what is pending
                answered += await self._drain_held(key, held)

    async def _drain_held(self, key: str, held: Held) -> int:
        answered = 0
        try:
            while True:
                await self.backpressure.yield_to_ingest()
                async with self.work, self.sessions() as session:
                    pending = await turns.next_pending_turn(session, key)
                    if pending is None:
                        return answered
                    tenant = await self.tenant_cache.for_tenant(
                        session, pending.turn.tenant, channel=pending.inbound.channel
                    )
                    ready: _Prepared | None = None
                    human = pending.owner != Owner.BOT
                    asked = not human and asks_for_human(
                        pending.inbound.text, tenant.handoff_phrases
                    )
                    if human or asked:
                        await self._store_facts(session, pending, tenant)
                    # Usually the window is assembled in the same session as the turn is read;
                    # a voice note waits for its transcript first, and a message for the model
                    # facts of the one before it.
                    elif not self._waits(pending):
                        ready = await self._prepare(session, pending)
                if human:
                    await self._leave_to_human(pending, tenant)
                elif asked:
                    await self._hand_over(pending, tenant, held, ASKED_BY_CUSTOMER, "done")
                else:
                    if ready is None:
                        ready = await self._prepare_after_waiting(pending)
                    await self._answer(pending, ready, held)
                answered += 1
        finally:
            # The last message's model facts are stored before the lock is let go: the next
            # holder's window shows them.
            await self.model_facts.settle(key)
            # The replies leave before the lock does: a next holder never overtakes them.
            await self.deliverer.flush(key)

    async def _store_facts(
        self, session: AsyncSession, pending: PendingTurn, tenant: TenantSettings
    ) -> None:
        """What `_prepare` stores of a message, for one the bot does not answer."""
        if await store_message_facts(session, pending.inbound, pending.inbound.text):
            await session.commit()
        self.model_facts.start(
            pending.turn.conversation_key, tenant, pending.inbound, pending.inbound.text
        )

    async def _leave_to_human(self, pending: PendingTurn, tenant: TenantSettings) -> None:
        """A turn of a conversation a human answers: marked so, nothing sent."""
        async with self.work, self.sessions.begin() as session:
            await turns.set_fields(session, pending.turn.id, status="human")
        await self._maybe_compact(pending.turn, tenant)

    async def _hand_over(
        self,
        pending: PendingTurn,
        tenant: TenantSettings,
        held: Held,
        reason: str,
        status: str,
        fields: dict[str, Any] | None = None,
        text: str | None = None,
    ) -> None:
        """Move the conversation to waiting and tell the customer (the tenant's text, or the
        model's own `text`), in the transaction that stores the reply."""
        turn, inbound = pending.turn, pending.inbound
        reply_fields: dict[str, Any] = {**(fields or {}), "status": status}
        reply_fields.update(
            delivery_status="sending", delivery_lease_until=utcnow() + DELIVERY_LEASE
        )
        async with self.work:
            reply = await self._store_reply(
                turn,
                held,
                inbound,
                text or tenant.handoff_message,
                None if text else CANNED_HANDOFF,
                reply_fields,
                handoff=reason,
            )
        self.deliverer.send_in_order(
            turn.conversation_key, turn, inbound, reply, window=pending.window
        )
        await self._maybe_compact(turn, tenant)

    async def _failed_repeatedly(self, pending: PendingTurn, tenant: TenantSettings) -> bool:
        """Whether this failure is the tenant's `handoff_after_failures`-th in a row."""
        count = tenant.handoff_after_failures
        if count <= 0:
            return False
        if count == 1:
            return True
        async with self.work, self.sessions() as session:
            before = await turns.recent_outcomes(
                session,
                pending.turn.conversation_key,
                before_message_id=pending.inbound.id,
                limit=count - 1,
            )
        return len(before) == count - 1 and all(status == "failed" for status in before)

    async def pending_conversations(self) -> list[str]:
        async with self.sessions() as session:
            return await turns.pending_conversations(session)

    def _waits(self, pending: PendingTurn) -> bool:
        needs_transcript = self.transcriber is not None and is_voice_note(pending.inbound)
        return (
            needs_transcript
            or is_contact_card(pending.inbound)
            or self.model_facts.running(pending.turn.conversation_key)
        )

    async def _prepare_after_waiting(self, pending: PendingTurn) -> _Prepared:
        heard = await self._heard(pending.inbound)
        # The model's facts of the conversation's previous message are stored before these.
        await self.model_facts.settle(pending.turn.conversation_key)
        async with self.work, self.sessions() as session:
            return await self._prepare(session, pending, heard)

    async def _prepare(
        self, session: AsyncSession, pending: PendingTurn, heard: MessageRecord | None = None
    ) -> _Prepared:
        """The facts the message states, stored (a voice note's are sourced to its transcript,
        and only as sure as it), then its window."""
        turn, inbound = pending.turn, pending.inbound
        heard = heard or inbound
        if await store_message_facts(session, heard, heard.text):
            await session.commit()
        tenant = await self.tenant_cache.for_tenant(session, turn.tenant, channel=inbound.channel)
        self.model_facts.start(turn.conversation_key, tenant, heard, heard.text)
        assembled = await assemble_context(
            session,
            identity=_identity_of(pending),
            settings=tenant,
            counter=self.counter,
            message=heard.text,
            episode_id=turn.episode_id,
            message_id=inbound.id,
            recall_cache=self.recall_cache,
        )
        return _Prepared(tenant, assembled)

    async def _answer(self, pending: PendingTurn, ready: _Prepared, held: Held) -> None:
        turn, inbound = pending.turn, pending.inbound
        tenant, assembled = ready.tenant, ready.assembled
        window = assembled.window
        budget = budget_for(tenant)
        provider = self.providers.for_window(tenant, window.report.estimated_tokens)
        fields: dict[str, Any] = {"report": window.report.to_dict(), "provider": provider.name}
        adapter = self.adapters.get(inbound.channel)
        recipient = inbound.sender.sender if inbound.sender is not None else ""
        typing = Typing(adapter, recipient, inbound.provider_message_id)
        typing.start()
        preview = Preview.of(adapter, recipient, inbound.provider_message_id, typing.stop)
        try:
            completion = await self._call_model(
                provider, tenant, turn.tenant, window.messages, budget.output_reserve, preview
            )
            text = completion.text
            # The offline model's text is about the gateway, not the customer: kept out of
            # memory (summaries, facts, recall) like the fallback message.
            canned = CANNED_OFFLINE if provider.name == "offline" else None
            fields.update(
                status="done",
                model=completion.model,
                prompt_tokens=completion.usage.prompt_tokens,
                completion_tokens=completion.usage.completion_tokens,
                cached_tokens=completion.usage.cached_tokens,
                attempts=completion.attempts,
            )
        except ProviderError as exc:
            log.warning("model call failed", extra={"fields": {"turn": turn.id, "error": str(exc)}})
            text = tenant.fallback_message or FALLBACK_MESSAGE
            canned = CANNED_FALLBACK
            fields.update(status="failed", model=provider.model, error=str(exc)[:2000])
            fields["attempts"] = exc.attempts
        except BaseException:
            typing.stop()
            raise
        finally:
            if preview is not None:
                await preview.close()
        handoff: str | None = None
        if canned == CANNED_FALLBACK:
            if await self._failed_repeatedly(pending, tenant):
                handoff, text, canned = MODEL_FAILED, tenant.handoff_message, CANNED_HANDOFF
        else:
            text, marked = strip_marker(text, tenant.handoff_marker)
            if marked:
                # The model's words without the marker; none left: the tenant's text.
                handoff = MODEL_MARKER
                if not text:
                    text, canned = tenant.handoff_message, CANNED_HANDOFF
        attachments: tuple[Media, ...] = ()
        if canned is None:
            # The model's media markers become attachments (`context.reply_attachments`).
            text, found = split_attachments(text)
            attachments = tuple(Media(a.url, a.content_type, caption=a.caption) for a in found)
        # The reply is stored with its delivery lease taken, so sending needs no claim of its own.
        fields.update(delivery_status="sending", delivery_lease_until=utcnow() + DELIVERY_LEASE)
        try:
            async with self.work:
                reply = await self._store_reply(
                    turn, held, inbound, text, canned, fields, handoff=handoff, media=attachments
                )
        except _TakenMeanwhile:
            typing.stop()
            await self._leave_to_human(pending, tenant)
            return
        except BaseException:
            typing.stop()
            raise
        self.deliverer.send_in_order(
            turn.conversation_key,
            turn,
            inbound,
            reply,
            before_send=typing.stop,
            window=pending.window,
        )
        if assembled.unsummarized_tokens is None:
            await self._maybe_compact(turn, tenant)
        else:
            # What the window read, and the two messages of this turn that memory keeps.
            kept = [m for m in (inbound, reply) if not m.meta.canned]
            pending_tokens = assembled.unsummarized_tokens + sum(m.token_count for m in kept)
            await self._compact_past(turn, tenant, pending_tokens)

    async def _call_model(
        self,
        provider: ModelProvider,
        tenant: TenantSettings,
        tenant_ref: TenantRef,
        window: Sequence[ChatMessage],
        max_tokens: int,
        preview: Preview | None,
    ) -> Completion:
        limits = CallLimits(
            in_flight=tenant.model_max_in_flight, per_minute=tenant.model_requests_per_minute
        )
        provider_key = f"{provider.name}:{provider.model}"
        async with self.gate.admit(provider_key, tenant_ref.encode(), limits):
            if preview is None:
                return await provider.complete(window, max_tokens=max_tokens)
            return await provider.complete(window, max_tokens=max_tokens, on_text=preview.on_text)

    async def _maybe_compact(self, turn: TurnRecord, tenant: TenantSettings) -> None:
        """`_compact_past` with the episode's unsummarized tokens read from storage (the
        window did not read them all)."""
        if self.memory is None:
            return
        async with self.work, self.sessions() as session:
            summary = await summaries.episode_summary(session, turn.customer_id, turn.episode_id)
            pending = await messages.unsummarized_tokens(
                session,
                turn.customer_id,
                turn.episode_id,
                summary.last_message_id if summary else None,
            )
        await self._compact_past(turn, tenant, pending)

    async def _compact_past(self, turn: TurnRecord, tenant: TenantSettings, pending: int) -> None:
        """Enqueue compaction once the episode's unsummarized tokens pass the high-water
        mark; the worker compacts down to the low-water mark (hysteresis)."""
        if self.memory is not None and pending > tenant.threshold_tokens:
            await self.memory.enqueue(CompactionJob(turn.customer_id, turn.episode_id))

    async def _heard(self, inbound: MessageRecord) -> MessageRecord:
        """A voice note's transcript, a shared contact's card read; any other message."""
        if is_contact_card(inbound):
            return await read_contact_card(
                inbound,
                sessions=self.sessions,
                channel=self.adapters.get(inbound.channel),
                counter=self.counter,
            )
        if self.transcriber is None:
            return inbound
        return await heard_message(
            inbound,
            sessions=self.sessions,
            channel=self.adapters.get(inbound.channel),
            transcriber=self.transcriber,
            counter=self.counter,
        )

    async def _store_reply(
        self,
        turn: TurnRecord,
        held: Held,
        inbound: MessageRecord,
        text: str,
        canned: str | None,
        fields: dict[str, Any],
        *,
        handoff: str | None = None,
        media: tuple[Media, ...] = (),
    ) -> MessageRecord:
        """Store the reply and its turn's fields; `handoff` (a reason) also moves the
        conversation to waiting. Raises `_TakenMeanwhile` (nothing stored) when the
        conversation stopped being the bot's."""
        async with self.sessions.begin() as session:
            if held.fence is not None and not await turns.claim_fence(
                session, turn.conversation_key, held.fence
            ):
                raise StaleWriter(f"turn {turn.id}: a newer lock holder wrote first")
            reply = await messages.append_message(
                session,
                NewMessage(
                    customer_id=turn.customer_id,
                    episode_id=turn.episode_id,
                    channel=inbound.channel,
                    role="assistant",
                    text=text,
                    token_count=self.counter.count(text),
                    identity_id=inbound.identity_id,
                    provider_message_id=f"reply:{inbound.id}",
                    thread_key=inbound.thread_key,
                    media=media,
                    meta=MessageMeta(in_reply_to=inbound.id, canned=canned or None),
                    tenant=turn.tenant,
                ),
                add_to_episode=False,
            )
            if not await turns.set_fields_while_bot_owns(
                session, turn.id, turn.conversation_key, reply_message_id=reply.id, **fields
            ):
                raise _TakenMeanwhile(turn.conversation_key)
            await episodes.record_message(
                session, turn.episode_id, at=reply.created_at, tokens=reply.token_count
            )
            await self._reply_stored(session, turn, reply, handoff)
        return reply

    async def _reply_stored(
        self, session: AsyncSession, turn: TurnRecord, reply: MessageRecord, handoff: str | None
    ) -> None:
        """In the reply's transaction: the hand-over to a human, and the reply announced."""
        if handoff is None and (self.events is None or not self.events.enabled):
            return
        conversation = await conversations.by_key(session, turn.conversation_key)
        if conversation is None:
            return  # stored before conversations were kept
        if handoff is not None:
            change = await change_owner(
                session,
                self.events,
                conversation.id,
                AskedForHuman(handoff),
                actor="bot",
                reason=handoff,
            )
            if isinstance(change, OwnerChange):
                conversation = change.conversation
        await message_created(session, self.events, conversation, reply)


def _identity_of(pending: PendingTurn) -> ResolvedIdentity:
    """The identity as resolved when the message arrived (its evidence decides the scopes)."""
    inbound = pending.inbound
    if inbound.identity_id is None or pending.identity_key is None:
        raise RecordNotFound(f"message {inbound.id} has no stored sender identity")
    sender = inbound.sender
    return ResolvedIdentity(
        customer_id=inbound.customer_id,
        identity_id=inbound.identity_id,
        key=ChannelIdentityKey.parse(pending.identity_key),
        level=LinkLevel.parse(sender.link_level if sender else "anonymous"),
        allowed_scopes=frozenset(sender.allowed_scopes if sender else ("public",)),
        outcome="known",
        pending_links=0,
        own_facts_only=sender.own_facts_only if sender else True,
    )
