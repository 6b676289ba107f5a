"""A customer's message stored as a pending turn, as the accept step leaves it (identity,
episode, conversation, message with its sender, turn), and the steps' shared dependencies."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel
from gateway.memory.background_facts import BackgroundFacts
from gateway.memory.recall import RecallCache
from gateway.providers.limits import ModelGate
from gateway.runtime.clock import utcnow
from gateway.storage.records import NewMessage, PendingTurn, SenderSnapshot
from gateway.storage.repositories import (
    conversations,
    customers,
    episodes,
    messages,
    tenants,
    turns,
)
from gateway.storage.repositories.conversations import MessageSeen
from gateway.turns.accept import conversation_key
from gateway.turns.answer import AnswerDeps
from gateway.turns.answer.preparation import Preparation
from gateway.turns.answer.reply_steps import ReplyTurn
from tests.support.stored_conversations import COUNTER

CHANNEL = "whatsapp"


def answer_deps(
    sessions: async_sessionmaker[AsyncSession], adapters: Mapping[str, Channel] | None = None
) -> AnswerDeps:
    return AnswerDeps.of(
        sessions=sessions,
        counter=COUNTER,
        tenant_cache=tenants.SettingsCache(),
        adapters=adapters or {},
        gate=ModelGate(),
    )


async def store_pending_turn(
    sessions: async_sessionmaker[AsyncSession], text: str, *, owner: str = "bot"
) -> str:
    """A new customer's message `text`, waiting for its answer; the conversation's key."""
    phone = f"+551198{random.randrange(10**7):07d}"
    external = f"whatsapp:{phone}"
    async with sessions.begin() as session:
        customer = await customers.create_customer(session)
        identity = await customers.create_identity(
            session,
            customer_id=customer.id,
            channel=CHANNEL,
            external_id=external,
            link_level="inferred",
            evidence={},
        )
        episode = await episodes.open_episode(
            session, customer_id=customer.id, channel=CHANNEL, started_at=utcnow()
        )
        message = await messages.append_message(
            session,
            NewMessage(
                customer.id,
                episode.id,
                CHANNEL,
                "user",
                text,
                COUNTER.count(text),
                identity_id=identity.id,
                provider_message_id=f"SM{customer.id}",
                thread_key=f"{CHANNEL}:{external}",
                sender=SenderSnapshot(external, "inferred", ("public",), False),
            ),
        )
        key = conversation_key(customer.id, CHANNEL)
        seen = MessageSeen(
            key, customer.id, CHANNEL, identity.id, external, message.created_at, inbound=True
        )
        stored = await conversations.note_messages(session, [seen])
        await turns.create_turn(
            session,
            inbound_message_id=message.id,
            customer_id=customer.id,
            episode_id=episode.id,
            conversation_key=key,
        )
        if owner != "bot":
            await conversations.set_owner(
                session, stored[key].id, owner=owner, held_by="ana" if owner == "human" else None
            )
    return key


async def read_pending(sessions: async_sessionmaker[AsyncSession], key: str) -> PendingTurn:
    async with sessions() as session:
        pending = await turns.next_pending_turn(session, key)
    assert pending is not None
    return pending


async def store_next_message(
    sessions: async_sessionmaker[AsyncSession], before: PendingTurn, text: str
) -> None:
    """The same sender's next message in the conversation, pending after `before`'s turn."""
    inbound = before.inbound
    async with sessions.begin() as session:
        message = await messages.append_message(
            session,
            NewMessage(
                inbound.customer_id,
                before.turn.episode_id,
                CHANNEL,
                "user",
                text,
                COUNTER.count(text),
                identity_id=inbound.identity_id,
                provider_message_id=f"SM{inbound.id}-next",
                thread_key=inbound.thread_key,
                sender=inbound.sender,
            ),
        )
        await turns.create_turn(
            session,
            inbound_message_id=message.id,
            customer_id=inbound.customer_id,
            episode_id=before.turn.episode_id,
            conversation_key=before.turn.conversation_key,
        )


async def prepared_reply_turn(
    sessions: async_sessionmaker[AsyncSession], key: str, **tenant: object
) -> ReplyTurn:
    """The conversation's pending turn prepared as the drain would (facts, window), with the
    tenant's settings overridden by `tenant`."""
    pending = await read_pending(sessions, key)
    deps = answer_deps(sessions)
    facts = BackgroundFacts(sessions=sessions, extractor_for=None, gate=deps.gate, work=deps.work)
    preparation = Preparation(deps, recall_cache=RecallCache(), model_facts=facts)
    prepared = await preparation.prepare(pending)
    return ReplyTurn(pending, prepared.tenant.model_copy(update=tenant), prepared.assembled)


@contextmanager
def statements_run(sessions: async_sessionmaker[AsyncSession], *words: str) -> Iterator[list[str]]:
    """The statements the sessions' engine runs inside the block that hold every one of
    `words`, filled as they run."""
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if all(word in statement for word in words):
            seen.append(statement)

    engine = sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)
