"""Compaction applied to real storage (SQLite and PostgreSQL): facts with sources, the
corrected Pix key superseding the old one, the pointer advancing once, traces written."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.worker import MemoryWorker
from gateway.storage.repositories import facts, messages, summaries
from tests.support.databases import DatabaseUnderTest
from tests.support.stored_conversations import COUNTER, store_episode

START = datetime(2026, 11, 2, 14, 0, tzinfo=UTC)


async def _conversation(
    session: AsyncSession, lines: list[tuple[str, str]], channel: str = "whatsapp"
) -> tuple[str, str, list[int]]:
    stored = await store_episode(session, lines, started_at=START, channel=channel)
    return stored.customer_id, stored.episode_id, stored.message_ids


def _pix_story() -> list[tuple[str, str]]:
    lines = [
        ("user", "Oi, quero receber o reembolso do pedido PED-4471."),
        ("assistant", "Claro! Qual é a sua chave Pix?"),
        ("user", "Minha chave pix é ana.souza@example.org"),
        ("assistant", "Anotado. O reembolso sai em até 3 dias úteis."),
    ]
    for index in range(40):  # enough talk to cross the high-water mark
        lines.append(("user", f"Mais uma dúvida sobre a entrega número {index}, pode ver?"))
        lines.append(("assistant", f"Verifiquei a entrega {index}: está a caminho do CEP."))
    lines.append(("user", "Errei, a chave pix certa é ana.pix@example.org"))
    lines.append(("assistant", "Corrigido, vou usar a nova chave."))
    for index in range(10):
        lines.append(("user", f"Obrigada pela ajuda {index}."))
        lines.append(("assistant", f"Por nada {index}!"))
    return lines


@pytest.fixture
async def worker(database: DatabaseUnderTest):  # type: ignore[no-untyped-def]
    engine = database.engine()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    yield MemoryWorker(sessions, COUNTER, InProcessQueue())
    await engine.dispose()


async def test_pix_correction_supersedes_and_the_job_applies_once(worker: MemoryWorker) -> None:
    sessions = worker.sessions
    async with sessions.begin() as session:
        customer_id, episode_id, ids = await _conversation(session, _pix_story())
    job = CompactionJob(customer_id, episode_id, "closed")
    first = await worker.handle(job)
    assert first.compacted > 0 and first.pointer == ids[-1]
    again = await worker.handle(job)  # a replayed or reclaimed job
    assert again.compacted == 0
    async with sessions() as session:
        current = {f.key: f for f in await facts.current_facts(session, customer_id)}
        history = await facts.fact_history(session, customer_id, "pix_key")
        summary = await summaries.episode_summary(session, customer_id, episode_id)
        traces = await summaries.list_traces(session, customer_id)
    assert current["pix_key"].value == "ana.pix@example.org"
    assert current["pix_key"].scope == "payment"
    assert current["pix_key"].source_message_id == ids[-22]
    assert [f.value for f in history] == ["ana.souza@example.org", "ana.pix@example.org"]
    assert history[0].superseded_by == current["pix_key"].id
    assert summary is not None and summary.last_message_id == ids[-1]
    assert summary.sentences and all(s["source_message_id"] in ids for s in summary.sentences)
    assert len(traces) == 1
    assert traces[0].facts_after["facts"]


async def test_open_episode_keeps_recent_turns_and_last_messages(worker: MemoryWorker) -> None:
    sessions = worker.sessions
    long_story = _pix_story() * 3  # about 5,000 tokens: past the 3,000 high-water mark
    async with sessions.begin() as session:
        customer_id, episode_id, ids = await _conversation(session, long_story)
    outcome = await worker.handle(CompactionJob(customer_id, episode_id))
    assert outcome.compacted > 0
    assert outcome.pointer is not None and outcome.pointer < ids[-2]  # last user + assistant kept
    assert ids[-1] - outcome.pointer >= 8  # at least 8 recent turns stay whole
    async with sessions() as session:
        remaining = await messages.unsummarized_tokens(
            session, customer_id, episode_id, outcome.pointer
        )
    assert remaining <= 1500 or ids.index(outcome.pointer) >= len(ids) - 9


async def test_a_job_that_is_not_due_reads_no_messages(worker: MemoryWorker) -> None:
    # A job queued again while an earlier one compacted (the answer step queues one per turn
    # past the high-water mark): one sum of tokens tells it has nothing to do.
    sessions = worker.sessions
    async with sessions.begin() as session:
        customer_id, episode_id, _ = await _conversation(session, _pix_story()[:4])
    statements: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(" ".join(statement.split()))

    engine = sessions.kw["bind"].sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        outcome = await worker.handle(CompactionJob(customer_id, episode_id))
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert outcome.compacted == 0
    assert [s for s in statements if "FROM messages" in s and "sum(" not in s] == []
