"""Preparation of a turn the bot answers: the message's read version (a voice note's
transcript, a shared contact's card), the facts it states, and its window.

Usually the window is assembled as soon as the turn is read; a voice note waits for its
transcript first, a contact card for its card, a message for the model facts of the one
before it, and a tenant's message for its business's operational state when the tenant has a
`state_endpoint` (`waits`, then `prepare_after_waiting`, outside the work slots).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.customers.resolve import ResolvedIdentity
from gateway.knowledge.cache import KnowledgeCache
from gateway.memory.background_facts import BackgroundFacts
from gateway.memory.message_facts import store_message_facts
from gateway.memory.recall import RecallCache
from gateway.providers.transcriber import Transcriber
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import MessageRecord, PendingTurn
from gateway.tenants import TenantSettings
from gateway.tools.assertion import IdentityClaims
from gateway.tools.state import BusinessState, StateSource
from gateway.turns.answer.deps import AnswerDeps
from gateway.turns.contact_cards import is_contact_card, read_contact_card
from gateway.turns.voice_notes import heard_message, is_voice_note
from gateway.turns.window import AssembledContext, assemble_context
from identity import ChannelIdentityKey, LinkLevel


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a turn's model call needs: the tenant's settings and the assembled window."""

    tenant: TenantSettings
    assembled: AssembledContext


class Preparation:
    def __init__(
        self,
        deps: AnswerDeps,
        *,
        recall_cache: RecallCache,
        model_facts: BackgroundFacts,
        knowledge: KnowledgeCache | None = None,
        transcriber: Transcriber | None = None,
        state: StateSource | None = None,
    ) -> None:
        self._deps = deps
        self._recall_cache = recall_cache
        self._knowledge = knowledge
        self._model_facts = model_facts
        self._transcriber = transcriber
        self._state = state

    def waits(self, pending: PendingTurn, tenant: TenantSettings) -> bool:
        """Whether the window must wait for something outside the turn's session."""
        needs_transcript = self._transcriber is not None and is_voice_note(pending.inbound)
        return (
            needs_transcript
            or is_contact_card(pending.inbound)
            or self._model_facts.running(pending.turn.conversation_key)
            or (self._state is not None and tenant.state_endpoint is not None)
        )

    async def store_facts(self, pending: PendingTurn, tenant: TenantSettings) -> None:
        """What `prepare` stores of a message, for one the bot does not answer."""
        await self._store_facts(pending.inbound, pending.inbound.text)
        self._model_facts.start(
            pending.turn.conversation_key, tenant, pending.inbound, pending.inbound.text
        )

    async def prepare_after_waiting(self, pending: PendingTurn, tenant: TenantSettings) -> Prepared:
        heard = await self.heard(pending.inbound)
        # The model's facts of the conversation's previous message are stored before these.
        await self._model_facts.settle(pending.turn.conversation_key)
        business = await self._business(pending, tenant)
        async with self._deps.work:
            return await self.prepare(pending, heard, business)

    async def _business(self, pending: PendingTurn, tenant: TenantSettings) -> BusinessState | None:
        """The business's state of the conversation, within the tenant's `state_timeout_ms`."""
        endpoint = tenant.state_endpoint
        if self._state is None or endpoint is None:
            return None
        claims = IdentityClaims(
            customer_id=pending.inbound.customer_id,
            link_level=identity_of(pending).level,
            channel=pending.inbound.channel,
            conversation=pending.turn.conversation_key,
        )
        return await self._state.state_for(endpoint, tenant.state_timeout_ms, claims)

    async def prepare(
        self,
        pending: PendingTurn,
        heard: MessageRecord | None = None,
        business: BusinessState | None = None,
    ) -> Prepared:
        """The facts the message states, stored (a voice note's are sourced to its transcript,
        and only as sure as it), then its window, read after they are committed."""
        turn, inbound = pending.turn, pending.inbound
        heard = heard or inbound
        await self._store_facts(heard, heard.text)
        async with self._deps.reads() as session:
            tenant = await self._deps.tenant_cache.for_tenant(
                session, turn.tenant, channel=inbound.channel
            )
            self._model_facts.start(turn.conversation_key, tenant, heard, heard.text)
            assembled = await assemble_context(
                session,
                identity=identity_of(pending),
                settings=tenant,
                counter=self._deps.counter,
                message=heard.text,
                episode_id=turn.episode_id,
                message_id=inbound.id,
                recall_cache=self._recall_cache,
                business=business,
                knowledge=(
                    self._knowledge.of(turn.tenant) if self._knowledge is not None else None
                ),
            )
        return Prepared(tenant, assembled)

    async def _store_facts(self, message: MessageRecord, text: str) -> None:
        # A message stating no fact costs no statement (nor a transaction).
        async with self._deps.sessions() as session:
            if await store_message_facts(session, message, text):
                await session.commit()

    async def heard(self, inbound: MessageRecord) -> MessageRecord:
        """A voice note's transcript, a shared contact's card read; any other message."""
        deps = self._deps
        if is_contact_card(inbound):
            return await read_contact_card(
                inbound,
                sessions=deps.sessions,
                channel=deps.adapters.get(inbound.channel),
                counter=deps.counter,
            )
        if self._transcriber is None:
            return inbound
        return await heard_message(
            inbound,
            sessions=deps.sessions,
            channel=deps.adapters.get(inbound.channel),
            transcriber=self._transcriber,
            counter=deps.counter,
        )


def identity_of(pending: PendingTurn) -> ResolvedIdentity:
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
