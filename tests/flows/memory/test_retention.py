"""Retention on real storage (SQLite and PostgreSQL): a tenant's raw messages older than
`retention_days` go in batches, with their turns and deliveries; facts and summaries outlive
them unless `retention_covers_memory`; a run stopped after one batch and started again keeps
everything newer than the window; the background work runs it on its own and `/metrics`
counts what went."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.keys import METRICS, SESSIONS
from gateway.memory.retention import run_retention
from gateway.runtime.clock import utcnow
from gateway.storage.models import (
    CompactionTrace,
    Episode,
    EpisodeSummary,
    Fact,
    Message,
    OutboundMessage,
    TurnRow,
)
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import facts, messages, outbound, summaries, tenants, turns
from gateway.storage.updates import NewCompactionTrace, TurnOutcome
from tests.support.stack import Stack, running_stack
from tests.support.stored_conversations import COUNTER, store_episode

NOW = utcnow()
OLD = NOW - timedelta(days=40)
RECENT = NOW - timedelta(days=2)


def _sessions(stack: Stack) -> async_sessionmaker[AsyncSession]:
    sessions: async_sessionmaker[AsyncSession] = stack.client.app[SESSIONS]
    return sessions


@pytest.fixture(params=["embedded", "production"])
async def stack(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(request.param, tmp_path) as running:
        yield running


@dataclass(frozen=True)
class Seeded:
    customer_id: str
    episode_id: str
    old: list[int]  # messages older than the window, oldest first
    recent: list[int]
    old_turn: int
    recent_turn: int
    fact_old_source: int
    fact_recent_source: int
    fact_superseded: int  # old source, superseded by `fact_old_source`
    version: int  # a recent message superseding old[0]
    tokens_recent: int


async def _seed(stack: Stack, channel: str = "whatsapp") -> Seeded:
    async with _sessions(stack).begin() as session:
        lines = [("user" if i % 2 == 0 else "assistant", f"antiga {i} CPF 123") for i in range(8)]
        episode = await store_episode(
            session, lines, started_at=OLD, channel=channel, closed_at=OLD + timedelta(hours=1)
        )
        old = episode.message_ids
        recent = []
        tokens_recent = 0
        for i, text in enumerate(["recente 0", "recente 1", "recente 2"]):
            stored = await messages.append_message(
                session,
                NewMessage(
                    episode.customer_id,
                    episode.episode_id,
                    channel,
                    "user" if i % 2 == 0 else "assistant",
                    text,
                    COUNTER.count(text),
                    created_at=RECENT + timedelta(minutes=i),
                    supersedes_id=old[0] if i == 0 else None,
                ),
            )
            recent.append(stored.id)
            tokens_recent += COUNTER.count(text)
        key = f"{channel}:{episode.customer_id}"
        old_turn = await turns.create_turn(
            session,
            inbound_message_id=old[2],
            customer_id=episode.customer_id,
            episode_id=episode.episode_id,
            conversation_key=key,
        )
        await turns.finish_turn(
            session, old_turn.id, TurnOutcome(status="done", reply_message_id=old[3])
        )
        await outbound.record_part(
            session, channel, "SM-old", turn_id=old_turn.id, reply_message_id=old[3], part=0
        )
        recent_turn = await turns.create_turn(
            session,
            inbound_message_id=recent[0],
            customer_id=episode.customer_id,
            episode_id=episode.episode_id,
            conversation_key=key,
        )
        superseded = await facts.record_fact(
            session, episode.customer_id, NewFact("email", "ana@old.example", "profile", old[4])
        )
        from_old = await facts.record_fact(
            session, episode.customer_id, NewFact("email", "ana@new.example", "profile", old[5])
        )
        from_recent = await facts.record_fact(
            session, episode.customer_id, NewFact("order_id", "PED-4471", "account", recent[1])
        )
        await summaries.save_summary(
            session,
            customer_id=episode.customer_id,
            episode_id=episode.episode_id,
            summary="Ana perguntou do pedido.",
            last_message_id=old[6],
            origin_channel=channel,
            token_count=6,
            sentences=[{"text": "Ana perguntou do pedido.", "source_message_id": old[6]}],
        )
        await summaries.add_trace(
            session,
            NewCompactionTrace(
                customer_id=episode.customer_id,
                compactor="offline",
                episode_id=episode.episode_id,
                summary_after="Ana perguntou do pedido.",
            ),
        )
    return Seeded(
        episode.customer_id,
        episode.episode_id,
        old,
        recent,
        old_turn.id,
        recent_turn.id,
        from_old.id,
        from_recent.id,
        superseded.id,
        recent[0],
        tokens_recent,
    )


async def _retain(
    stack: Stack, days: int | None, covers_memory: bool = False, **more: object
) -> None:
    async with _sessions(stack).begin() as session:
        await tenants.save_tenant_settings(
            session,
            domain="default",
            settings={"retention_days": days, "retention_covers_memory": covers_memory, **more},
        )


async def _rows(stack: Stack, model: type, *where: object) -> list:  # type: ignore[type-arg]
    async with _sessions(stack)() as session:
        return list(await session.scalars(select(model).where(*where)))  # type: ignore[arg-type]


async def _message_texts(stack: Stack, seeded: Seeded) -> dict[int, str]:
    rows = await _rows(stack, Message, Message.episode_id == seeded.episode_id)
    return {row.id: row.text for row in rows}


async def test_nothing_goes_without_retention_days(stack: Stack) -> None:
    seeded = await _seed(stack)
    assert await run_retention(_sessions(stack), now=NOW) == {}
    assert len(await _message_texts(stack, seeded)) == 11


async def test_old_messages_go_in_batches_and_memory_outlives_them(stack: Stack) -> None:
    seeded = await _seed(stack)
    await _retain(stack, 30)
    before = await _message_texts(stack, seeded)

    # Stopped after the first batch (as a crash would): three of the old, nothing recent.
    first = await run_retention(_sessions(stack), now=NOW, batch=3, max_batches=1)
    assert first["messages"] + first["messages_erased"] == 3
    after_one = await _message_texts(stack, seeded)
    for message_id in seeded.recent:
        assert after_one[message_id] == before[message_id]
    assert set(seeded.old[3:]) <= set(after_one)
    assert all(after_one.get(i, "") == "" for i in seeded.old[:3])

    # Run again to the end.
    rest = await run_retention(_sessions(stack), now=NOW, batch=3)
    assert rest["messages"] + rest["messages_erased"] == 5
    texts = await _message_texts(stack, seeded)
    for message_id in seeded.recent:
        assert texts[message_id] == before[message_id]
    # The sources of facts and the summary's last message stay as rows, their content erased.
    kept_for_memory = {seeded.old[4], seeded.old[5], seeded.old[6]}
    assert set(texts) == kept_for_memory | set(seeded.recent)
    erased = await _rows(stack, Message, Message.id.in_(kept_for_memory))
    assert all(r.text == "" and r.redacted and r.extra is None for r in erased)
    # Memory outlives the messages.
    fact_ids = {f.id for f in await _rows(stack, Fact, Fact.customer_id == seeded.customer_id)}
    assert fact_ids == {seeded.fact_old_source, seeded.fact_recent_source, seeded.fact_superseded}
    [summary] = await _rows(stack, EpisodeSummary, EpisodeSummary.episode_id == seeded.episode_id)
    assert summary.summary == "Ana perguntou do pedido."
    assert (
        len(await _rows(stack, CompactionTrace, CompactionTrace.episode_id == seeded.episode_id))
        == 1
    )
    # The old turn and its delivery went; the recent turn stays; the new version forgot the old.
    assert [t.id for t in await _rows(stack, TurnRow)] == [seeded.recent_turn]
    assert await _rows(stack, OutboundMessage) == []
    [version] = await _rows(stack, Message, Message.id == seeded.version)
    assert version.supersedes_id is None
    [episode] = await _rows(stack, Episode, Episode.id == seeded.episode_id)
    assert episode.token_total == seeded.tokens_recent
    # A third run finds nothing more to do.
    assert await run_retention(_sessions(stack), now=NOW, batch=3) == {}


async def test_memory_goes_too_when_the_tenant_says_so(stack: Stack) -> None:
    seeded = await _seed(stack)
    await _retain(stack, 30, covers_memory=True)
    removed = await run_retention(_sessions(stack), now=NOW, batch=3)
    assert removed["facts"] == 2 and removed["summaries"] == 1 and removed["turns"] == 1
    assert removed["messages"] == 8 and "messages_erased" not in removed
    assert set(await _message_texts(stack, seeded)) == set(seeded.recent)
    remaining = await _rows(stack, Fact, Fact.customer_id == seeded.customer_id)
    assert [f.id for f in remaining] == [seeded.fact_recent_source]
    assert await _rows(stack, EpisodeSummary, EpisodeSummary.episode_id == seeded.episode_id) == []
    # The trace that copied the summary goes with it.
    assert (
        await _rows(stack, CompactionTrace, CompactionTrace.episode_id == seeded.episode_id) == []
    )
    # The episode row stays (its recent messages still belong to it).
    assert len(await _rows(stack, Episode, Episode.id == seeded.episode_id)) == 1


async def test_a_channel_override_retains_only_that_channels_messages(stack: Stack) -> None:
    chat = await _seed(stack, channel="whatsapp")
    call = await _seed(stack, channel="phone")
    await _retain(stack, None, channels={"phone": {"retention_days": 30}})
    removed = await run_retention(_sessions(stack), now=NOW)
    assert removed["messages"] + removed["messages_erased"] == 8
    assert len(await _message_texts(stack, chat)) == 11
    assert set(await _message_texts(stack, call)) == {
        call.old[4],
        call.old[5],
        call.old[6],
        *call.recent,
    }


async def test_metrics_count_what_retention_removed(stack: Stack) -> None:
    await _seed(stack)
    await _retain(stack, 30, covers_memory=True)
    await run_retention(_sessions(stack), now=NOW, metrics=stack.app[METRICS])
    text = await (await stack.client.get("/metrics")).text()
    assert 'relaydesk_retention_deleted_total{kind="messages"} 8.0' in text
    assert 'relaydesk_retention_deleted_total{kind="facts"} 2.0' in text


async def test_the_background_work_runs_retention_every_interval(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path, RELAYDESK_RETENTION_INTERVAL_S=0.2) as stack:
        seeded = await _seed(stack)
        await _retain(stack, 30, covers_memory=True)
        async with asyncio.timeout(10):
            while len(await _message_texts(stack, seeded)) > len(seeded.recent):
                await asyncio.sleep(0.1)
        assert set(await _message_texts(stack, seeded)) == set(seeded.recent)
        text = await (await stack.client.get("/metrics")).text()
        assert 'relaydesk_retention_deleted_total{kind="messages"} 8.0' in text


async def test_two_processes_running_retention_at_once_remove_each_row_once(stack: Stack) -> None:
    seeded = await _seed(stack)
    await _retain(stack, 30, covers_memory=True)
    first, second = await asyncio.gather(
        run_retention(_sessions(stack), now=NOW, batch=2),
        run_retention(_sessions(stack), now=NOW, batch=2),
    )
    assert first["messages"] + second["messages"] == 8, (first, second)
    assert set(await _message_texts(stack, seeded)) == set(seeded.recent)
    [episode] = await _rows(stack, Episode, Episode.id == seeded.episode_id)
    assert episode.token_total == seeded.tokens_recent
