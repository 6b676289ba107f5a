"""Preparation: the facts a message states stored, its window assembled for the sender."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.background_facts import BackgroundFacts
from gateway.memory.recall import RecallCache
from gateway.storage.errors import RecordNotFound
from gateway.storage.repositories import facts
from gateway.tenants import TenantSettings
from gateway.turns.answer.preparation import Preparation, identity_of
from identity import LinkLevel
from tests.gateway.turns.answer.stored_turns import answer_deps, read_pending, store_pending_turn


def _preparation(sessions: async_sessionmaker[AsyncSession]) -> Preparation:
    deps = answer_deps(sessions)
    model_facts = BackgroundFacts(
        sessions=sessions, extractor_for=None, gate=deps.gate, work=deps.work
    )
    return Preparation(deps, recall_cache=RecallCache(), model_facts=model_facts)


async def test_a_message_is_prepared_with_its_facts_stored_first(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    text = "Meu email é ana.souza@example.com, pode mandar o boleto?"
    pending = await read_pending(sessions, await store_pending_turn(sessions, text))
    preparation = _preparation(sessions)
    assert not preparation.waits(pending, TenantSettings())
    prepared = await preparation.prepare(pending)
    window = prepared.assembled.window
    assert window.messages[-1].content == text
    assert window.messages[0].role == "system"
    async with sessions() as session:
        stored = await facts.current_facts(session, pending.turn.customer_id)
    assert [(f.key, f.value) for f in stored] == [("email", "ana.souza@example.com")]
    # A plain text message is heard as it is.
    assert await preparation.heard(pending.inbound) == pending.inbound


async def test_the_window_is_for_the_identity_as_the_message_arrived(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi"))
    identity = identity_of(pending)
    assert identity.level is LinkLevel.INFERRED
    assert identity.allowed_scopes == frozenset({"public"})
    assert str(identity.key) == pending.identity_key
    with pytest.raises(RecordNotFound):
        identity_of(replace(pending, identity_key=None))
