"""`relaydesk bench embeddings` at a tiny size (every figure present and plausible, the JSON
contract) and the history `bench reply --embedded-history` embeds before its load."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import replace

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from devtools.bench.embedded_history import (
    HISTORY_MESSAGES,
    NO_HISTORY_LINE,
    EmbeddedHistory,
    seed_embedded_history,
)
from devtools.bench.embeddings_bench import EmbeddingsOptions, run_embeddings_bench
from devtools.bench.embeddings_data import history_sizes
from devtools.bench.history import count_tokens, make_history
from devtools.bench.load_options import LoadOptions
from devtools.bench.load_report import LoadResult, SideResult
from devtools.bench.populate import populate
from gateway.cli import main
from gateway.embeddings.cache import CachedEmbedder, VectorCache
from gateway.embeddings.offline import OFFLINE_MODEL, OfflineEmbedder
from gateway.embeddings.similarity import HybridSimilarity, QueryBudget, RecallVectors
from gateway.memory.recall import RecallCache, RecallScope, recall_items
from gateway.storage.models import ChannelIdentity, Episode, Message
from gateway.storage.models_embeddings import Embedding
from gateway.tenants import TenantSettings

# Serial: a benchmark: its figures are timings.
pytestmark = pytest.mark.serial

COUNTER = TiktokenCounter(load_encoding())


async def test_a_tiny_run_reports_every_figure() -> None:
    progress: list[str] = []
    result = await run_embeddings_bench(
        EmbeddingsOptions(messages=40, chunks=10, queries=5, read_sizes=(60, 150)),
        progress.append,
    )
    line = result.json_line()
    assert "\n" not in line
    figures = json.loads(line)

    assert figures["model"] == OFFLINE_MODEL
    assert figures["threads"] == 1  # the settings' default, as shipped
    background = figures["background"]
    assert set(background) == {"messages", "knowledge_chunks"}
    # Every stored row was embedded, once.
    assert (background["messages"]["stored"], background["messages"]["rows"]) == (40, 40)
    assert (background["knowledge_chunks"]["stored"], background["knowledge_chunks"]["rows"]) == (
        10,
        10,
    )
    for kind in background.values():
        assert kind["seconds"] > 0 and kind["rows_per_s"] > 0
        assert kind["rows_per_s"] == pytest.approx(kind["rows"] / kind["seconds"], rel=0.01)
        assert kind["cpu_s_per_1000_rows"] > 0

    query = figures["query"]
    assert query["queries"] == 5
    assert 0 < query["p50_ms"] <= query["p99_ms"]
    assert query["cpu_ms_per_message"] > 0
    # From the cache, a message's vector costs no model run.
    assert 0 < query["cached_p50_ms"] < query["p50_ms"]
    assert 0 <= query["late"] <= 5

    reads = figures["read_ms"]
    assert set(reads) == {"60", "150"}
    assert [reads[size]["rows"] for size in ("60", "150")] == [60, 150]
    assert all(read["median_ms"] > 0 for read in reads.values())

    table = result.table()
    assert re.search(r"^ +messages +40 +40 ", table, re.MULTILINE), table
    assert "customer with 150 messages: 150 vectors" in table
    assert any(step.startswith("messages: 40 rows") for step in progress)


def test_messages_spread_over_customers_of_distinct_sizes() -> None:
    for total in (20, 40, 41, 1_003):
        sizes = history_sizes(total)
        assert sum(sizes) == total
        assert len(set(sizes)) == len(sizes) and min(sizes) >= 2


def test_the_cli_prints_the_table_then_the_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "embeddings", "--messages", "20", "--chunks", "2", "--queries", "2"]
    # The read of 1,000 and 5,000 stored vectors is part of every run from the command line.
    assert main([*argv, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    figures = json.loads(out[-1])
    assert figures["background"]["messages"]["rows"] == 20
    assert [figures["read_ms"][size]["rows"] for size in ("1000", "5000")] == [1_000, 5_000]
    assert out[0].startswith(f"embeddings: {OFFLINE_MODEL}, 1 thread(s)")


def test_too_few_messages_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "embeddings", "--messages", "5"]) == 2
    assert "messages must be at least 20" in capsys.readouterr().err


def test_embedded_history_is_a_load_mode_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "reply", "--embedded-history"]) == 2
    assert "--embedded-history need --model-latency" in capsys.readouterr().err
    assert LoadOptions(model_latency_s=1.0).embedded_history is False


async def _vectors_of(sessions: async_sessionmaker[AsyncSession], customer_ids: list[str]) -> int:
    async with sessions() as session:
        found = await session.scalar(
            select(func.count())
            .select_from(Embedding)
            .join(Message, Message.id == Embedding.message_id)
            .where(Message.customer_id.in_(customer_ids), Embedding.model == OFFLINE_MODEL)
        )
    return int(found or 0)


async def test_the_seeded_history_and_nothing_else_has_vectors_before_the_load(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # A customer stored before: its rows are not the seeding's to embed.
    earlier = replace(make_history(12, seed=4242), size=4_242_000 + uuid.uuid4().int % 1_000)
    before = await populate(
        sessions, earlier, count_tokens(earlier, COUNTER), TenantSettings(), COUNTER
    )
    area = uuid.uuid4().int % 90 + 10
    phones = [f"+55{area}97{index:07d}" for index in range(2)]

    seeded = await seed_embedded_history(sessions, phones, COUNTER)

    assert (seeded.customers, seeded.messages) == (2, 2 * HISTORY_MESSAGES)
    assert seeded.vectors == seeded.messages
    assert seeded.seconds > 0
    # Every seeded message has its vector; the customer stored before has none.
    assert await _vectors_of(sessions, list(seeded.customer_ids)) == seeded.messages
    assert await _vectors_of(sessions, [before.identity.customer_id]) == 0
    assert "every reply embeds its message" in seeded.line()

    # A reply of a seeded customer embeds its message: recall has candidates with vectors.
    customer_id = seeded.customer_ids[0]
    cache = VectorCache(8)
    queries = CachedEmbedder(OfflineEmbedder(niceness=0), cache)
    # No deadline: a busy machine's first model load must not make the message late.
    similarity = HybridSimilarity(
        queries, queries.name, deadline_s=60.0, budget=QueryBudget.unlimited()
    )
    async with sessions() as session:
        open_episode = await session.scalar(
            select(Episode.id).where(Episode.customer_id == customer_id, Episode.status == "open")
        )
        identity = await session.scalar(
            select(ChannelIdentity.id).where(
                ChannelIdentity.customer_id == customer_id, ChannelIdentity.channel == "whatsapp"
            )
        )
        await recall_items(
            session,
            RecallScope(customer_id, identity, ()),
            message="Cadê o meu pedido?",
            budget=2_000,
            counter=COUNTER,
            exclude_episode=open_episode,
            cache=RecallCache(similarity=RecallVectors(similarity)),
        )
    await queries.close()
    assert len(cache) == 1 and similarity.late == 0


def _side(model: str) -> SideResult:
    return SideResult(
        model=model,
        offered=2,
        refused=0,
        latencies_ms=(10.0, 20.0),
        ack_ms=(1.0, 2.0),
        fallbacks=0,
        span_s=1.0,
        reply_span_s=0.5,
        peak_in_flight=1,
        model_requests=2,
        gateway_cpu_s=0.1,
    )


@pytest.mark.parametrize("embedded", [False, True])
def test_the_load_table_says_whether_history_was_embedded(embedded: bool) -> None:
    history = EmbeddedHistory(("c1", "c2"), 32, 32, 1.5) if embedded else None
    result = LoadResult(
        offline=_side("offline (instant)"),
        slow=_side("slow (1 s)"),
        webchat=None,
        customers=200,
        rate=2.0,
        seconds=1.0,
        background=1,
        model_latency_s=1.0,
        stream_rate=None,
        history=history,
    )
    rows = result.table().splitlines()
    figures = json.loads(result.json_line())
    if history is None:
        assert rows[-1] == NO_HISTORY_LINE
        assert figures["embedded_history"] is None
    else:
        assert rows[-1].startswith("history: 32 messages of 2 customers stored and embedded")
        assert figures["embedded_history"] == {
            "customers": 2,
            "messages": 32,
            "vectors": 32,
            "seconds": 1.5,
        }
