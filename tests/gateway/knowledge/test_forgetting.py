"""Forgetting knowledge documents: dropped in this process without Redis, in every process
with it, on the channel the erasure uses, without either listener acting on the other's
announcements."""

from __future__ import annotations

import asyncio

from redis.asyncio import Redis

from context.recall_index import build_index
from gateway.customers.forgetting import Forgetting
from gateway.knowledge.forgetting import DocumentsForgotten, KnowledgeForgetting
from gateway.memory.recall import RecallCache

FORGOTTEN = DocumentsForgotten("default/shop.example.com", ("d1", "d2"))


def _url(redis: Redis) -> str:
    kwargs = redis.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


async def _until(condition, timeout_s: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)


def test_the_message_reads_back_and_nothing_else_does() -> None:
    assert DocumentsForgotten.from_message(FORGOTTEN.to_message().encode()) == FORGOTTEN
    for other in ('["customer-1"]', "not json", '{"knowledge": []}', '{"knowledge": {}}'):
        assert DocumentsForgotten.from_message(other) is None


async def test_without_redis_this_process_drops_at_once() -> None:
    dropped: list[DocumentsForgotten] = []
    forgetting = KnowledgeForgetting(None)
    forgetting.on_forget(dropped.append)
    forgetting.listen()
    await forgetting.announce(FORGOTTEN)
    assert dropped == [FORGOTTEN]
    await forgetting.close()


async def test_an_announcement_reaches_another_process_and_spares_the_recall(
    redis: Redis,
) -> None:
    other_process = Redis.from_url(_url(redis))
    speaker, listener = KnowledgeForgetting(redis), KnowledgeForgetting(other_process)
    heard: list[DocumentsForgotten] = []
    listener.on_forget(heard.append)
    # The erasure's listener on the same channel, with a customer cached.
    recall = RecallCache()
    recall.put(("d1", None, None), "fingerprint", build_index([]))
    erasure = Forgetting(recall, other_process)
    listener.listen()
    erasure.listen()
    assert listener.subscribed is not None and erasure.subscribed is not None
    await asyncio.wait_for(listener.subscribed.wait(), 5)
    await asyncio.wait_for(erasure.subscribed.wait(), 5)

    await speaker.announce(FORGOTTEN)
    await _until(lambda: bool(heard))
    assert heard == [FORGOTTEN]
    # A customer erased: the knowledge listener hears nothing of it.
    await Forgetting(RecallCache(), redis).announce({"someone"})
    await asyncio.sleep(0.2)
    assert heard == [FORGOTTEN]
    assert recall.holds("d1")

    for closing in (listener, erasure, speaker):
        await closing.close()
    await other_process.aclose()
