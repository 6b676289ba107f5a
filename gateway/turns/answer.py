"""Answer: one conversation's pending turns, one at a time, in arrival order.

Under the conversation lock (in-process, or Redis with a fencing token): the window assembled
for the sender's identity as it was when the message arrived, the model called (the tenant's
fallback text when it fails), the reply stored with its usage and budget report — refused if a
newer lock holder wrote — and handed to the deliver step; compaction queued once the episode
passes its high-water mark.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel
from context import TokenCounter
from gateway.coordination.locks import ConversationLocks, Held
from gateway.customers.resolve import ResolvedIdentity
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.memory.recall import RecallCache
from gateway.providers import FALLBACK_MESSAGE, ProviderError
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import Transcriber
from gateway.runtime.clock import utcnow
from gateway.storage.records import MessageRecord, NewMessage, TurnRecord
from gateway.storage.repositories import customers, episodes, messages, summaries, tenants, turns
from gateway.tenants import TenantSettings
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import DELIVERY_LEASE, Deliverer
from gateway.turns.voice_notes import voice_text
from gateway.turns.window import assemble_context, budget_for
from identity import ChannelIdentityKey, LinkLevel

log = logging.getLogger("relaydesk.answer")


class StaleWriter(Exception):
    """This process's conversation lock expired and a newer holder already wrote."""


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
    ) -> None:
        self.sessions = sessions
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

    async def drain(self, key: str) -> int:
        """Answer the conversation's pending turns in order; returns how many were answered.

        The lock is taken only when a turn is waiting (a kick for a turn another process
        already answered costs one query) and held until none is left."""
        async with self.sessions() as session:
            floor = await turns.current_fence(session, key)
            if await turns.next_pending(session, key) is None:
                return 0
        answered = 0
        async with self.locks.hold(key, floor=floor) as held:
            while True:
                await self.backpressure.yield_to_ingest()
                async with self.sessions() as session:
                    turn = await turns.next_pending(session, key)
                    if turn is None:
                        return answered
                    inbound = await messages.get_message(
                        session, turn.customer_id, turn.inbound_message_id
                    )
                await self._answer(turn, inbound, held)
                answered += 1

    async def pending_conversations(self) -> list[str]:
        async with self.sessions() as session:
            return await turns.pending_conversations(session)

    async def _answer(self, turn: TurnRecord, inbound: MessageRecord, held: Held) -> None:
        text_in = await self._voice_text(inbound)
        async with self.sessions() as session:
            tenant = await self.tenant_cache.get(session, channel=inbound.channel)
            identity = await _identity_of(session, inbound)
            assembled = await assemble_context(
                session,
                identity=identity,
                settings=tenant,
                counter=self.counter,
                message=text_in,
                episode_id=turn.episode_id,
                message_id=inbound.id,
                recall_cache=self.recall_cache,
            )
        window = assembled.window
        budget = budget_for(tenant)
        provider = self.providers.for_window(tenant, window.report.estimated_tokens)
        fields: dict[str, Any] = {"report": window.report.to_dict(), "provider": provider.name}
        try:
            completion = await provider.complete(window.messages, max_tokens=budget.output_reserve)
            text = completion.text
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
            fields.update(status="failed", model=provider.model, error=str(exc)[:2000])
            fields["attempts"] = exc.attempts
        # The reply is stored with its delivery lease taken, so sending needs no claim of its own.
        fields.update(delivery_status="sending", delivery_lease_until=utcnow() + DELIVERY_LEASE)
        reply = await self._store_reply(turn, held, inbound, text, fields)
        await self.deliverer.send(turn, inbound, reply, claimed=True)
        await self._maybe_compact(turn, tenant)

    async def _maybe_compact(self, turn: TurnRecord, tenant: TenantSettings) -> None:
        """Enqueue compaction once the episode's unsummarized tokens pass the high-water
        mark; the worker compacts down to the low-water mark (hysteresis)."""
        if self.memory is None:
            return
        async with self.sessions() as session:
            summary = await summaries.episode_summary(session, turn.customer_id, turn.episode_id)
            pending = await messages.unsummarized_tokens(
                session,
                turn.customer_id,
                turn.episode_id,
                summary.last_message_id if summary else None,
            )
        if pending > tenant.threshold_tokens:
            await self.memory.enqueue(CompactionJob(turn.customer_id, turn.episode_id))

    async def _voice_text(self, inbound: MessageRecord) -> str:
        if self.transcriber is None:
            return inbound.text
        return await voice_text(
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
        fields: dict[str, Any],
    ) -> MessageRecord:
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
                    extra={"in_reply_to": inbound.id},
                ),
                add_to_episode=False,
            )
            await turns.finish_turn(session, turn.id, reply_message_id=reply.id, **fields)
            await episodes.record_message(
                session, turn.episode_id, at=reply.created_at, tokens=reply.token_count
            )
        return reply


async def _identity_of(session: AsyncSession, inbound: MessageRecord) -> ResolvedIdentity:
    """The identity as resolved when the message arrived (its evidence decides the scopes)."""
    identity_id = inbound.identity_id or ""
    row = await customers.identity_by_id(session, identity_id)
    sender = inbound.sender
    return ResolvedIdentity(
        customer_id=inbound.customer_id,
        identity_id=identity_id,
        key=ChannelIdentityKey.parse(row.external_id),
        level=LinkLevel.parse(sender.link_level if sender else "anonymous"),
        allowed_scopes=frozenset(sender.allowed_scopes if sender else ("public",)),
        outcome="known",
        pending_links=0,
        own_facts_only=sender.own_facts_only if sender else True,
    )
