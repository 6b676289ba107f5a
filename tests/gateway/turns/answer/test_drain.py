"""The drain: a conversation's pending turns answered in order under its lock, each routed
(answered, left to a person, handed over), the replies handed to the deliver step before the
lock is let go."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.coordination.locks import InProcessLocks
from gateway.memory.recall import RecallCache
from gateway.storage.message_meta import CANNED_HANDOFF, CANNED_KEY
from gateway.storage.models import Conversation, Message, TurnRow
from gateway.storage.records import PendingTurn
from gateway.turns.answer import Answerer, AnswerSteps
from gateway.turns.backpressure import Backpressure
from gateway.turns.deliver import Deliverer
from tests.gateway.turns.answer.models import ScriptedModel, pool_of
from tests.gateway.turns.answer.stored_turns import (
    answer_deps,
    read_pending,
    statements_run,
    store_next_message,
    store_pending_turn,
)


def _answerer(
    sessions: async_sessionmaker[AsyncSession], model: ScriptedModel, locks: InProcessLocks
) -> Answerer:
    deps = answer_deps(sessions)
    return Answerer(
        deps,
        AnswerSteps.build(deps, providers=pool_of(model), recall_cache=RecallCache()),
        locks=locks,
        backpressure=Backpressure(),
        deliverer=Deliverer(sessions=sessions, adapters={}),
    )


async def _turns(sessions: async_sessionmaker[AsyncSession], key: str) -> list[TurnRow]:
    async with sessions() as session:
        rows = await session.scalars(
            select(TurnRow).where(TurnRow.conversation_key == key).order_by(TurnRow.id)
        )
        return list(rows)


async def _owner(sessions: async_sessionmaker[AsyncSession], key: str) -> str:
    async with sessions() as session:
        owner = await session.scalar(
            select(Conversation.owner).where(Conversation.conversation_key == key)
        )
    return str(owner)


async def test_pending_turns_are_answered_in_order(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Primeira pergunta")
    await store_next_message(sessions, await read_pending(sessions, key), "Segunda pergunta")
    model = ScriptedModel("Resposta.")
    answer = _answerer(sessions, model, InProcessLocks())
    assert key in await answer.pending_conversations()

    assert await answer.drain(key) == 2
    assert [window[-1].content for window in model.windows] == [
        "Primeira pergunta",
        "Segunda pergunta",
    ]
    rows = await _turns(sessions, key)
    assert [row.status for row in rows] == ["done", "done"]
    # Handed to the deliver step and sent (here: no channel configured) before the drain ended.
    assert [row.delivery_status for row in rows] == ["failed", "failed"]
    assert all(row.delivery_lease_until is None for row in rows)
    async with sessions() as session:
        replies = await session.scalars(
            select(Message.id)
            .where(Message.customer_id == rows[0].customer_id)
            .where(Message.role == "assistant")
            .order_by(Message.id)
        )
        assert [row.reply_message_id for row in rows] == list(replies)
    assert await answer.drain(key) == 0
    assert key not in await answer.pending_conversations()


async def test_one_waiting_turn_is_read_once_under_the_lock(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # The stored reply says nothing else was pending: the drain reads no next turn under the
    # lock, only its check after letting the lock go.
    key = await store_pending_turn(sessions, "Oi")
    answer = _answerer(sessions, ScriptedModel("Olá!"), InProcessLocks())
    with statements_run(sessions, "JOIN messages", "turns.status") as reads:
        assert await answer.drain(key) == 1
    assert len(reads) == 1


class _MessageAfterTheReply(Deliverer):
    """A deliver step during whose flush (the reply written, the lock still held) the customer's
    next message is stored, once."""

    next_text: str | None = None
    before: PendingTurn | None = None

    async def flush(self, key: str) -> None:
        await super().flush(key)
        if self.next_text is not None and self.before is not None:
            text, self.next_text = self.next_text, None
            await store_next_message(self.sessions, self.before, text)


async def test_a_turn_stored_after_the_reply_is_answered_by_the_same_drain(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Primeira")
    deliverer = _MessageAfterTheReply(sessions=sessions, adapters={})
    deliverer.before = await read_pending(sessions, key)
    deliverer.next_text = "Segunda"
    model = ScriptedModel("Certo.")
    deps = answer_deps(sessions)
    answer = Answerer(
        deps,
        AnswerSteps.build(deps, providers=pool_of(model), recall_cache=RecallCache()),
        locks=InProcessLocks(),
        backpressure=Backpressure(),
        deliverer=deliverer,
    )
    assert await answer.drain(key) == 2  # found by the check after the lock was let go
    assert [window[-1].content for window in model.windows] == ["Primeira", "Segunda"]
    assert [row.status for row in await _turns(sessions, key)] == ["done", "done"]


async def test_a_held_lock_leaves_the_turns_to_its_holder(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Oi")
    locks = InProcessLocks()
    model = ScriptedModel("Olá!")
    answer = _answerer(sessions, model, locks)
    async with locks.hold(key):
        assert await answer.drain(key) == 0
    assert model.windows == []
    assert await answer.drain(key) == 1


async def test_a_conversation_a_person_holds_is_not_answered(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Oi de novo", owner="human")
    model = ScriptedModel("Olá!")
    assert await _answerer(sessions, model, InProcessLocks()).drain(key) == 1
    assert model.windows == []
    [row] = await _turns(sessions, key)
    assert (row.status, row.reply_message_id, row.delivery_status) == ("human", None, None)


async def test_a_customer_asking_for_a_person_is_handed_over_without_the_model(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Quero falar com um atendente")
    model = ScriptedModel("Olá!")
    assert await _answerer(sessions, model, InProcessLocks()).drain(key) == 1
    assert model.windows == []
    assert await _owner(sessions, key) == "waiting"
    [row] = await _turns(sessions, key)
    assert row.status == "done" and row.reply_message_id is not None
    async with sessions() as session:
        notice = await session.get(Message, row.reply_message_id)
    assert notice is not None and (notice.extra or {}).get(CANNED_KEY) == CANNED_HANDOFF


async def test_the_models_handoff_marker_hands_over_with_its_words(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    key = await store_pending_turn(sessions, "Meu pedido veio quebrado")
    model = ScriptedModel("Sinto muito, vou chamar alguém. [[handoff]]")
    assert await _answerer(sessions, model, InProcessLocks()).drain(key) == 1
    assert await _owner(sessions, key) == "waiting"
    [row] = await _turns(sessions, key)
    async with sessions() as session:
        reply = await session.get(Message, row.reply_message_id)
    assert reply is not None and reply.text == "Sinto muito, vou chamar alguém."
    assert CANNED_KEY not in (reply.extra or {})
