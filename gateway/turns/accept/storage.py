"""Lots of arrivals stored: each in one transaction through `LotWriter`, then counted and an
idle episode a message closed queued for its final summary.

A lot of several is written at once, with no retry: anything unusual (an edit in it, a
failure) stores it as lots of one instead, in order, a chat thread stopping at its first
failed message (`ThreadBlocked`) so it keeps its order. A lot of one is retried twice: a
replay stored meanwhile, or the concurrent first message of the same sender that created its
identity, is found by the retry.

A late retry of an erased message is settled with `MessageErased` (nothing written) and its
Redis dedupe mark, set again by the sighting, goes as the erasure's did."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.coordination.dedupe import SeenKeys, Sighting
from gateway.memory.queue import CompactionJob, CompactionQueue
from gateway.runtime.metrics import Metrics
from gateway.runtime.outages import is_storage_down
from gateway.storage.errors import IdentityRace
from gateway.turns.accept.accepted import Accepted, MessageErased, ThreadBlocked
from gateway.turns.accept.arrival import Arrival
from gateway.turns.accept.writer import LotWriter

log = logging.getLogger("relaydesk.accept")

ATTEMPTS_ALONE = 3


class LotStorage:
    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        writer: LotWriter,
        metrics: Metrics,
        seen: SeenKeys | None = None,
        memory: CompactionQueue | None = None,
    ) -> None:
        self._sessions = sessions
        self._writer = writer
        self._metrics = metrics
        self._seen = seen
        self._memory = memory

    async def store(self, lot: Sequence[Arrival]) -> None:
        """Store `lot` in arrival order and settle each arrival with its outcome."""
        lot = await self._sight(lot)
        if len(lot) > 1 and not any(arrival.is_edit for arrival in lot):
            if await self._store_together(lot):
                return
            # The lot marked them seen: asked again, Redis would call them repeats.
            lot = [a.sighted(Sighting.REPEAT) if a.sighting is Sighting.FIRST else a for a in lot]
        await self._store_alone_each(lot)

    async def _sight(self, lot: Sequence[Arrival]) -> list[Arrival]:
        """Each marked seen for the replays' fast path, in one round trip."""
        if self._seen is None:  # without Redis the constraint decides
            return list(lot)
        sightings = await self._seen.sight_many([arrival.key for arrival in lot])
        return [a.sighted(s) for a, s in zip(lot, sightings, strict=True)]

    async def _store_together(self, lot: Sequence[Arrival]) -> bool:
        """The lot in one transaction; False when it has to be stored as lots of one."""
        try:
            async with self._sessions.begin() as session:
                # Every key is looked up (a sighting only says "probably"): one stored message
                # would otherwise fail the whole lot.
                accepted = await self._writer.write(session, lot, find_stored=True)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not is_storage_down(exc):
                log.info(
                    "a lot of messages is stored one by one (%s)",
                    type(exc).__name__,
                    extra={"fields": {"messages": len(lot), "error": type(exc).__name__}},
                )
                return False
            for arrival in lot:
                arrival.settle(exc)
            return True
        for arrival, outcome in zip(lot, accepted, strict=True):
            await self._after_commit(arrival, outcome)
            arrival.settle(outcome)
        return True

    async def _store_alone_each(self, lot: Sequence[Arrival]) -> None:
        """The lot as lots of one, in order; a thread stops at its first failure."""
        failed: set[str] = set()
        for index, arrival in enumerate(lot):
            if arrival.thread in failed:
                arrival.settle(ThreadBlocked(arrival.thread))
                continue
            try:
                arrival.settle(await self._store_alone(arrival))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                arrival.settle(exc)
                if is_storage_down(exc):
                    for rest in lot[index + 1 :]:
                        rest.settle(exc)
                    return
                failed.add(arrival.thread)

    async def _store_alone(self, arrival: Arrival) -> Accepted | MessageErased:
        # Only a repeat is looked up first; another stored one fails the insert, and the
        # retry looks it up (as many statements as a lookup, and none when it is new).
        find_stored = arrival.sighting is Sighting.REPEAT
        for attempt in range(ATTEMPTS_ALONE):
            try:
                async with self._sessions.begin() as session:
                    [accepted] = await self._writer.write(
                        session, [arrival], find_stored=find_stored
                    )
                break
            except (IntegrityError, IdentityRace):
                if attempt == ATTEMPTS_ALONE - 1:
                    raise
                find_stored = True
        await self._after_commit(arrival, accepted)
        return accepted

    async def _after_commit(self, arrival: Arrival, accepted: Accepted | MessageErased) -> None:
        """Counted, and an episode it closed queued for its final summary; an erased one's
        dedupe mark forgotten again."""
        if isinstance(accepted, MessageErased):
            if self._seen is not None:
                await self._seen.forget([arrival.key])
            return
        if accepted.duplicate:
            return
        self._metrics.inbound_messages.labels(arrival.inbound.channel).inc()
        if accepted.closed_episode_id is not None and self._memory is not None:
            # Does not raise while the queue is down: the job is kept and added later.
            await self._memory.enqueue(
                CompactionJob(accepted.customer_id, accepted.closed_episode_id, "closed")
            )
