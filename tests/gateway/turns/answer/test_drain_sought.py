"""The drain under the Redis lock: after letting the lock go it looks for pending turns again
only when another drain sought the lock meanwhile (and left its turn to this one)."""

from __future__ import annotations

import uuid

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.coordination.locks import RedisLocks
from gateway.memory.recall import RecallCache
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


class _AnotherDrainMeanwhile(Deliverer):
    """A deliver step during whose flush (the reply written, the lock still held) the
    customer's next message is stored by another process, whose drain finds the lock held."""

    before: PendingTurn | None = None
    other: RedisLocks | None = None
    refused: int = 0

    async def flush(self, key: str) -> None:
        await super().flush(key)
        if self.before is not None and self.other is not None:
            before, self.before = self.before, None
            await store_next_message(self.sessions, before, "Segunda")
            async with self.other.try_hold(key) as held:
                self.refused += held is None


def _answerer(
    sessions: async_sessionmaker[AsyncSession], locks: RedisLocks, deliverer: Deliverer
) -> tuple[Answerer, ScriptedModel]:
    model = ScriptedModel("Certo.")
    deps = answer_deps(sessions)
    answerer = Answerer(
        deps,
        AnswerSteps.build(deps, providers=pool_of(model), recall_cache=RecallCache()),
        locks=locks,
        backpressure=Backpressure(),
        deliverer=deliverer,
    )
    return answerer, model


async def _forget(redis: Redis, key: str) -> None:
    await redis.delete(*(f"relaydesk:{kind}:{key}" for kind in ("lock", "fence", "sought")))


async def test_a_lock_nobody_sought_is_let_go_without_another_look(
    sessions: async_sessionmaker[AsyncSession], redis: Redis
) -> None:
    key = await store_pending_turn(sessions, f"Oi {uuid.uuid4().hex}")
    answer, _ = _answerer(
        sessions, RedisLocks(redis, ttl_ms=5_000), Deliverer(sessions=sessions, adapters={})
    )
    try:
        with statements_run(sessions, "conversation_fences.fence", "EXISTS") as checks:
            assert await answer.drain(key) == 1
    finally:
        await _forget(redis, key)
    assert len(checks) == 1  # the look before taking the lock only


async def test_a_turn_another_drain_left_to_the_holder_is_answered_after_the_lock_goes(
    sessions: async_sessionmaker[AsyncSession], redis: Redis
) -> None:
    key = await store_pending_turn(sessions, "Primeira")
    deliverer = _AnotherDrainMeanwhile(sessions=sessions, adapters={})
    deliverer.before = await read_pending(sessions, key)
    deliverer.other = RedisLocks(redis, ttl_ms=5_000)
    answer, model = _answerer(sessions, RedisLocks(redis, ttl_ms=5_000), deliverer)
    try:
        assert await answer.drain(key) == 2
    finally:
        await _forget(redis, key)
    assert deliverer.refused == 1
    assert [window[-1].content for window in model.windows] == ["Primeira", "Segunda"]
