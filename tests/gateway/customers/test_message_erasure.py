"""Erasing one message or one episode on real storage (SQLite and PostgreSQL): what was
derived from it goes (facts, summary sentences, traces), the summary is rebuilt from what
remains, other facts stay; and a compaction racing an erasure writes nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from gateway.customers.erasure import AfterCommit, erase_customer, erase_episode, erase_message
from gateway.customers.forgetting import Forgetting
from gateway.memory.llm_compactor import LLMCompactor, llm_compactor_factory
from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.recall import RecallCache
from gateway.memory.service import compact_episode
from gateway.memory.worker import MemoryWorker
from gateway.storage.models import (
    AuditEntry,
    CompactionTrace,
    Customer,
    EpisodeSummary,
    Fact,
    ImmutableRowError,
    Message,
)
from gateway.storage.records import NewMessage
from gateway.storage.repositories import audit, facts, messages, summaries
from gateway.tenants import TenantSettings
from tests.support.openai_server import Call, FakeOpenAI
from tests.support.stored_conversations import StoredEpisode, store_episode

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2026, 11, 2, 14, 0, tzinfo=UTC)
LINES = [
    ("user", "Oi, meu e-mail é bia.alves@example.org"),
    ("assistant", "Anotado."),
    ("user", "O pedido PED-5521 não chegou até hoje"),
    ("assistant", "Vou verificar."),
    ("user", "Minha chave pix é bia.pix@example.org"),
    ("assistant", "Certo."),
]
ORDER = "PED-5521"


def _after() -> AfterCommit:
    return AfterCommit(None, Forgetting(RecallCache(), None))


async def _compacted(
    sessions: async_sessionmaker[AsyncSession],
) -> tuple[str, str, list[int], MemoryWorker]:
    async with sessions.begin() as session:
        stored = await store_episode(session, LINES, started_at=START, closed_at=START)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    outcome = await worker.handle(CompactionJob(stored.customer_id, stored.episode_id, "closed"))
    assert outcome.compacted > 0
    return stored.customer_id, stored.episode_id, stored.message_ids, worker


async def _facts(session: AsyncSession, customer_id: str) -> dict[str, int]:
    rows = await session.execute(
        select(Fact.value, Fact.source_message_id).where(Fact.customer_id == customer_id)
    )
    return {value: source for value, source in rows}


async def test_erasing_a_message_drops_its_fact_and_sentence_and_rebuilds_the_summary(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    customer_id, episode_id, ids, worker = await _compacted(sessions)
    async with sessions() as session:
        before = await _facts(session, customer_id)
        summary = await summaries.episode_summary(session, customer_id, episode_id)
    assert before[ORDER] == ids[2]
    assert summary is not None
    assert ids[2] in {s["source_message_id"] for s in summary.sentences}

    done = await erase_message(
        sessions, worker, _after(), ids[2], actor="ops", reason="typed into the wrong chat"
    )
    assert done.counts["messages"] == 1 and done.counts["facts"] == 1
    async with sessions() as session:
        after = await _facts(session, customer_id)
        rebuilt = await summaries.episode_summary(session, customer_id, episode_id)
        traces = await summaries.list_traces(session, customer_id)
        audit_rows = list(
            await session.scalars(select(AuditEntry).where(AuditEntry.subject_id == customer_id))
        )
        left = set(
            await session.scalars(select(Message.id).where(Message.customer_id == customer_id))
        )
    assert ORDER not in after
    assert after["bia.alves@example.org"] == ids[0]
    assert after["bia.pix@example.org"] == ids[4]
    assert left == set(ids) - {ids[2]}
    assert rebuilt is not None and ORDER not in rebuilt.summary
    assert ids[2] not in {s["source_message_id"] for s in rebuilt.sentences}
    assert {s["source_message_id"] for s in rebuilt.sentences} & {ids[0], ids[4]}
    assert traces and all(ORDER not in repr(t) for t in traces)
    [entry] = [e for e in audit_rows if e.action == "message.erased"]
    assert entry.details["message_ids"] == [ids[2]] and ORDER not in repr(entry.details)


async def test_a_fact_confirmed_by_another_message_keeps_that_one_as_its_source(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    customer_id, _, ids, worker = await _compacted(sessions)
    async with sessions.begin() as session:
        [email] = [f for f in await facts.current_facts(session, customer_id) if f.key == "email"]
        await facts.confirm_fact(session, customer_id, email.id, ids[4])
    await erase_message(sessions, worker, _after(), ids[0], actor="ops", reason="no consent")
    async with sessions() as session:
        row = await session.get(Fact, email.id)
    assert row is not None
    assert (row.source_message_id, row.confirmed_by_message_id) == (ids[4], ids[4])


async def test_erasing_a_correction_makes_the_value_it_replaced_current_again(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    lines = [
        ("user", "meu e-mail é velho@example.org"),
        ("user", "errei, meu e-mail é novo@example.org"),
    ]
    async with sessions.begin() as session:
        stored = await store_episode(session, lines, started_at=START, closed_at=START)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    await worker.handle(CompactionJob(stored.customer_id, stored.episode_id, "closed"))
    async with sessions() as session:
        current = [f.value for f in await facts.current_facts(session, stored.customer_id)]
    assert current == ["novo@example.org"]
    await erase_message(
        sessions, worker, _after(), stored.message_ids[1], actor="ops", reason="mistake"
    )
    async with sessions() as session:
        current = [f.value for f in await facts.current_facts(session, stored.customer_id)]
    assert current == ["velho@example.org"]


async def test_erasing_a_call_turn_erases_it_in_every_transcript_version(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions.begin() as session:
        stored = await store_episode(
            session, [("user", "bom dia")], started_at=START, channel="phone"
        )
        call = f"call-{uuid.uuid4().hex[:8]}"
        versions = []
        for version, text in ((1, "meu cpf é 529.982.247-25"), (2, "meu cpf é 529.982.247-25!")):
            for index, line in enumerate(("Central, bom dia", text)):
                added = await _append(session, stored, f"{call}:v{version}:{index}", line)
                versions.append(added)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    done = await erase_message(sessions, worker, _after(), versions[3], actor="ops", reason="x")
    async with sessions() as session:
        left = set(
            await session.scalars(
                select(Message.provider_message_id).where(Message.episode_id == stored.episode_id)
            )
        )
    assert done.counts["messages"] == 2
    assert left == {None, f"{call}:v1:0", f"{call}:v2:0"}


async def _append(session: AsyncSession, stored: StoredEpisode, provider_id: str, text: str) -> int:
    record = await messages.append_message(
        session,
        NewMessage(
            stored.customer_id,
            stored.episode_id,
            "phone",
            "user",
            text,
            COUNTER.count(text),
            provider_message_id=provider_id,
        ),
    )
    return record.id


async def test_erasing_an_episode_leaves_the_customers_other_episodes(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    customer_id, episode_id, ids, worker = await _compacted(sessions)
    async with sessions.begin() as session:
        other = await store_episode(session, LINES[:2], started_at=START)
    done = await erase_episode(sessions, worker, _after(), episode_id, actor="ops", reason="x")
    assert done.counts["episodes"] == 1 and done.counts["messages"] == len(ids)
    async with sessions() as session:
        leftover = await session.scalar(
            select(func.count()).select_from(Message).where(Message.customer_id == customer_id)
        )
        kept = await session.scalar(
            select(func.count())
            .select_from(Message)
            .where(Message.customer_id == other.customer_id)
        )
        derived = await session.scalar(
            select(func.count())
            .select_from(EpisodeSummary)
            .where(EpisodeSummary.episode_id == episode_id)
        )
    assert (leftover, kept, derived) == (0, 2, 0)


# --- a compaction racing an erasure ----------------------------------------------------------

SUMMARY_SETTINGS = TenantSettings(summary_model="openai:summary-mini")


@pytest.fixture
async def held_model() -> AsyncIterator[tuple[FakeOpenAI, asyncio.Event, LLMCompactor]]:
    gate = asyncio.Event()

    def hold(call: Call) -> asyncio.Event:
        return gate

    model = FakeOpenAI(
        reply=(
            '{"facts": [{"key": "order_id", "value": "PED-5521", "scope": "account",'
            ' "source_message_id": 0, "confidence": 0.9}], "summary": "Bia asked about PED-5521."}'
        ),
        hold_for=hold,
    )
    async with model.serving() as url, httpx.AsyncClient(timeout=10.0) as http:
        compactor = llm_compactor_factory(http, base_url=url, api_key=None)(SUMMARY_SETTINGS)
        assert compactor is not None
        yield model, gate, compactor
        gate.set()


async def test_a_compaction_racing_the_erasure_writes_nothing_back(
    sessions: async_sessionmaker[AsyncSession],
    held_model: tuple[FakeOpenAI, asyncio.Event, LLMCompactor],
) -> None:
    model, gate, compactor = held_model
    async with sessions.begin() as session:
        stored = await store_episode(session, LINES, started_at=START, closed_at=START)
    job = CompactionJob(stored.customer_id, stored.episode_id, "closed")
    compaction = asyncio.create_task(
        compact_episode(
            sessions, job, settings=SUMMARY_SETTINGS, counter=COUNTER, compactor=compactor
        )
    )
    for _ in range(200):  # the compaction read its messages and waits for the model
        if model.calls:
            break
        await asyncio.sleep(0.02)
    assert model.calls
    done = await erase_customer(sessions, _after(), stored.customer_id, actor="dpo", reason="x")
    assert done.counts["messages"] == len(LINES)
    gate.set()
    outcome = await compaction
    assert outcome.compacted == 0
    async with sessions() as session:
        counts = [
            await session.scalar(
                select(func.count())
                .select_from(table)
                .where(table.customer_id == stored.customer_id)
            )
            for table in (Fact, EpisodeSummary, CompactionTrace, Message)
        ]
        customer = await session.get(Customer, stored.customer_id)
    assert counts == [0, 0, 0, 0] and customer is None


async def test_compactions_and_erasures_at_once_leave_nothing_of_the_customer(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """The offline compaction writes in one transaction: whichever goes first, the erasure
    removes everything."""
    for _ in range(3):
        async with sessions.begin() as session:
            stored = await store_episode(session, LINES, started_at=START, closed_at=START)
        job = CompactionJob(stored.customer_id, stored.episode_id, "closed")
        results = await asyncio.gather(
            compact_episode(sessions, job, settings=TenantSettings(), counter=COUNTER),
            erase_customer(sessions, _after(), stored.customer_id, actor="dpo", reason="x"),
            return_exceptions=True,
        )
        assert not any(isinstance(r, BaseException) for r in results), results
        async with sessions() as session:
            left = [
                await session.scalar(
                    select(func.count())
                    .select_from(table)
                    .where(table.customer_id == stored.customer_id)
                )
                for table in (Fact, EpisodeSummary, CompactionTrace, Message)
            ]
        assert left == [0, 0, 0, 0]


async def test_audit_details_holding_an_erased_fact_are_scrubbed_whatever_the_script(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    lines = [("user", "meu nome é Conceição Araújo"), ("user", "meu e-mail é c@example.org")]
    async with sessions.begin() as session:
        stored = await store_episode(session, lines, started_at=START, closed_at=START)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    await worker.handle(CompactionJob(stored.customer_id, stored.episode_id, "closed"))
    async with sessions.begin() as session:
        values = {f.value: f for f in await facts.current_facts(session, stored.customer_id)}
        assert "Conceição Araújo" in values
        for value in ("Conceição Araújo", "c@example.org"):
            await audit.record_audit(
                session,
                actor="ops",
                action="pin_fact",
                reason="confirmed by phone",
                subject_type="customer",
                subject_id=stored.customer_id,
                details={"fact": values[value].id, "value": value},
            )
    await erase_message(
        sessions, worker, _after(), stored.message_ids[0], actor="ops", reason="no consent"
    )
    async with sessions() as session:
        pins = list(
            await session.scalars(
                select(AuditEntry.details).where(
                    AuditEntry.action == "pin_fact", AuditEntry.subject_id == stored.customer_id
                )
            )
        )
    assert {"erased": True} in pins
    assert {"fact": values["c@example.org"].id, "value": "c@example.org"} in pins
    assert "Conceição" not in repr(pins)


async def test_a_message_is_deleted_only_by_an_erasure(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions.begin() as session:
        stored = await store_episode(session, LINES[:1], started_at=START)
    with pytest.raises(ImmutableRowError):
        async with sessions.begin() as session:
            row = await session.get(Message, stored.message_ids[0])
            await session.delete(row)
    worker = MemoryWorker(sessions, COUNTER, InProcessQueue())
    done = await erase_message(
        sessions, worker, _after(), stored.message_ids[0], actor="ops", reason="x"
    )
    assert done.counts["messages"] == 1
    assert done.audit.details["message_ids"] == [stored.message_ids[0]]
