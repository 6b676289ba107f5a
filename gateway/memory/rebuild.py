"""`relaydesk compaction rebuild`: redo a customer's memory from the raw messages.

Summaries are dropped and recomputed episode by episode, oldest first; facts learned by
compaction or from each message are retracted and learned again, each typed message's first
(the old rows stay as history). Pinned facts (an operator's decision) are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.message_facts import store_message_facts
from gateway.memory.queue import CompactionJob
from gateway.memory.service import TRANSCRIPT_CHANNELS
from gateway.memory.worker import MemoryWorker
from gateway.storage.errors import RecordNotFound, require_customer
from gateway.storage.repositories import episodes, facts, messages, summaries


@dataclass(frozen=True, slots=True)
class RebuildReport:
    episodes: int
    messages_compacted: int
    facts_written: int


async def rebuild_customer(
    sessions: async_sessionmaker[AsyncSession], worker: MemoryWorker, customer_id: str
) -> RebuildReport:
    require_customer(customer_id)
    async with sessions.begin() as session:
        await summaries.drop_customer_summaries(session, customer_id)
        await facts.retract_unpinned(session, customer_id)
        found = await episodes.list_episodes(session, customer_id)
    compacted = written = 0
    for episode in found:
        if episode.channel not in TRANSCRIPT_CHANNELS:
            # What each typed message gave when it arrived, in order (a call's facts come from
            # its compaction, which knows its transcript versions). The offline extractors only:
            # a rebuild must not cost one model call per message.
            async with sessions.begin() as session:
                for message in await messages.episode_messages(session, customer_id, episode.id):
                    written += await store_message_facts(session, message, message.text)
        done, learned = await _compact_again(worker, customer_id, episode.id, episode.status)
        compacted += done
        written += learned
    return RebuildReport(len(found), compacted, written)


async def rebuild_summaries(
    sessions: async_sessionmaker[AsyncSession],
    worker: MemoryWorker,
    episode_keys: Iterable[tuple[str, str]],
) -> int:
    """Compact each (customer id, episode id) again from its stored messages, after its
    summary was dropped (an erasure of some of its messages); an episode gone meanwhile is
    skipped. Returns how many messages were compacted."""
    compacted = 0
    for customer_id, episode_id in episode_keys:
        async with sessions() as session:
            try:
                episode = await episodes.get_episode(session, customer_id, episode_id)
            except RecordNotFound:
                continue
        try:
            done, _ = await _compact_again(worker, customer_id, episode_id, episode.status)
        except RecordNotFound:
            continue
        compacted += done
    return compacted


async def _compact_again(
    worker: MemoryWorker, customer_id: str, episode_id: str, status: str
) -> tuple[int, int]:
    reason = "closed" if status == "closed" else "rebuild"
    compacted = written = 0
    while True:  # an open episode compacts down to its low-water mark in rounds
        outcome = await worker.handle(CompactionJob(customer_id, episode_id, reason))
        compacted += outcome.compacted
        written += outcome.facts_written
        if not outcome.compacted:
            return compacted, written
