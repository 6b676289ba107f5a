"""Closed episodes still owed their final summary are queued again.

The "closed" job is queued after the message that closed the episode was stored, so it can be
lost: the process stops before it reaches Redis, or Redis restarts without persistence. The
database knows better: a closed episode with a spoken message past its summary pointer has not
had its final compaction. Queueing it twice is harmless (compaction applies idempotently).

Only episodes closed within `LOOKBACK` are looked at, so an episode whose trailing messages can
never be compacted (not speech, an older transcript version) is not retried forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import summaries

log = logging.getLogger("relaydesk.memory")

SWEEP_EVERY_S = 60.0
LOOKBACK = timedelta(days=1)
BATCH = 200


async def owed_final_summary(
    session: AsyncSession, *, since: datetime, limit: int = BATCH
) -> list[tuple[str, str]]:
    """(customer id, episode id) of episodes closed since `since` with spoken messages past
    their summary pointer, oldest closure first."""
    return await summaries.owed_final_summary(session, since=since, limit=limit)


async def queue_owed_summaries(
    sessions: async_sessionmaker[AsyncSession],
    queue: CompactionQueue,
    *,
    now: Callable[[], datetime] = utcnow,
) -> int:
    """Queue a "closed" job for every episode owed its final summary; returns how many."""
    async with sessions() as session:
        owed = await owed_final_summary(session, since=now() - LOOKBACK)
    for customer_id, episode_id in owed:
        await queue.enqueue(CompactionJob(customer_id, episode_id, "closed"))
    return len(owed)


async def sweep_forever(
    sessions: async_sessionmaker[AsyncSession],
    queue: CompactionQueue,
    *,
    every_s: float = SWEEP_EVERY_S,
) -> None:
    while True:
        try:
            queued = await queue_owed_summaries(sessions, queue)
            if queued:
                log.info("final summaries queued again", extra={"fields": {"episodes": queued}})
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # storage down: the next round tries again
            log.warning("owed summaries sweep failed", extra={"fields": {"error": repr(exc)}})
        await asyncio.sleep(every_s)
