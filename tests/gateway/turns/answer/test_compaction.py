"""The compaction trigger: a job once the episode's unsummarized tokens pass the high-water
mark, canned texts not counted."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.storage.message_meta import CANNED_FALLBACK, MessageMeta
from gateway.storage.records import TurnRecord
from gateway.tenants import TenantSettings
from gateway.turns.answer.compaction import CompactionTrigger, kept_tokens
from tests.gateway.turns.answer.stored_turns import answer_deps, read_pending, store_pending_turn

TENANT = TenantSettings(threshold_tokens=100, low_water_tokens=50)


async def _queued(queue: InProcessQueue) -> list[CompactionJob]:
    jobs: list[CompactionJob] = []

    async def take(job: CompactionJob) -> None:
        jobs.append(job)

    worker = asyncio.create_task(queue.run(take))
    await queue.drained()
    worker.cancel()
    return jobs


async def test_past_the_high_water_mark_a_job_is_queued(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi, tudo bem?"))
    turn, inbound = pending.turn, pending.inbound
    reply = replace(inbound, id=inbound.id + 1, role="assistant", token_count=10)
    queue = InProcessQueue()
    trigger = CompactionTrigger(answer_deps(sessions), queue)

    # What the window read plus this turn's two messages: 100 is not past 100.
    at_mark = 100 - inbound.token_count - 10
    await trigger.after_reply(turn, TENANT, at_mark, inbound, reply)
    assert await _queued(queue) == []
    await trigger.after_reply(turn, TENANT, at_mark + 1, inbound, reply)
    assert await _queued(queue) == [CompactionJob(turn.customer_id, turn.episode_id)]

    # A canned reply is not memory's: it does not count.
    canned = replace(reply, meta=MessageMeta(canned=CANNED_FALLBACK))
    await trigger.after_reply(turn, TENANT, at_mark + 1, inbound, canned)
    assert await _queued(queue) == []


async def test_without_the_windows_count_the_episode_is_read_from_storage(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi " * 60))
    turn: TurnRecord = pending.turn
    queue = InProcessQueue()
    trigger = CompactionTrigger(answer_deps(sessions), queue)
    stored = pending.inbound.token_count
    low = TENANT.model_copy(update={"threshold_tokens": stored, "low_water_tokens": 1})
    await trigger.after_turn(turn, low)
    assert await _queued(queue) == []
    lower = TENANT.model_copy(update={"threshold_tokens": stored - 1, "low_water_tokens": 1})
    await trigger.after_reply(turn, lower, None, pending.inbound, pending.inbound)
    assert await _queued(queue) == [CompactionJob(turn.customer_id, turn.episode_id)]

    # Without a queue nothing is read or queued.
    await CompactionTrigger(answer_deps(sessions), None).after_turn(turn, lower)


async def test_kept_tokens_leave_canned_texts_out(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Bom dia"))
    inbound = pending.inbound
    canned = replace(inbound, token_count=40, meta=MessageMeta(canned=CANNED_FALLBACK))
    assert kept_tokens(inbound, canned) == inbound.token_count
