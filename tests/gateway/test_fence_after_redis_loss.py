"""A drain takes the lock without asking the database first; when Redis has lost its fence
counters (a restart without persistence), the first read under the lock sees the stored fence
above the lock's, and the drain takes a new token above it and answers at once, instead of
writing with a token the database refuses. PostgreSQL and Redis, through the real app."""

from __future__ import annotations

from pathlib import Path

from redis.asyncio import Redis
from sqlalchemy import select, update

from gateway.storage.models import ConversationFence, TurnRow
from tests.support.whatsapp_stack import until, whatsapp_stack

NUMBER = "+5511912340001"


async def test_a_turn_is_answered_at_once_after_redis_lost_the_fence_counter(
    tmp_path: Path, redis: Redis
) -> None:
    async with whatsapp_stack(tmp_path, "production") as gateway:
        stack = gateway.stack
        await gateway.say(NUMBER, "Olá, quero saber do meu pedido")
        async with stack.sessions()() as session:
            key = await session.scalar(select(TurnRow.conversation_key))
            assert key is not None
            first = await session.scalar(
                select(ConversationFence.fence).where(ConversationFence.conversation_key == key)
            )
        assert first is not None and first > 0
        # Holders went up to token 50 before Redis lost the counter.
        async with stack.sessions().begin() as session:
            await session.execute(
                update(ConversationFence)
                .where(ConversationFence.conversation_key == key)
                .values(fence=50)
            )
        assert await redis.delete(f"relaydesk:fence:{key}") == 1

        await gateway.post(NUMBER, "O pedido é o 4471-XB")
        # No sweep runs meanwhile (the first is 15 s away): the drain itself recovers.
        await until(lambda: len(gateway.twilio.created) == 2, timeout=5.0)
        async with stack.sessions()() as session:
            statuses = list(await session.scalars(select(TurnRow.status).order_by(TurnRow.id)))
            second = await session.scalar(
                select(ConversationFence.fence).where(ConversationFence.conversation_key == key)
            )
        assert statuses == ["done", "done"]
        assert second is not None and second > 50
