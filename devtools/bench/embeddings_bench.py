"""``relaydesk bench embeddings``: what vectors cost, in the background and on a reply's path.

On a temporary SQLite database, migrated like the gateway's:

* the background loop's pace: ``messages`` messages over `CUSTOMERS` customers (the synthetic
  support chats of `devtools.bench.history`, Portuguese and English, stored by `populate`), then
  ``chunks`` knowledge chunks (help-center answers, stored by the knowledge repository), each
  kind drained by a `BackgroundEmbedder` over the offline model as the gateway builds it (the
  settings' default threads, nice 19): rows, seconds, rows/s and the process's CPU per 1,000
  rows;
* a reply's own message: `HybridSimilarity.query_vector` for ``queries`` distinct customer
  messages, with the query embedder `query_embedder_for` builds (normal priority): wall ms
  p50/p99 and CPU ms per message, then the same messages again (the embedder's cache). The
  deadline is lifted here so the figure is the vector's whole price; the messages a reply would
  have ranked lexically (past `QUERY_DEADLINE_S`) are counted;
* the read of a customer's stored vectors (`embeddings.customer_vectors`) for customers with
  `READ_SIZES` messages. Their vectors are random unit vectors of the model's dimensions,
  written directly: the read does not depend on what they hold, and computing 6,000 of them
  would make the run minutes longer.

The figures are timings of this machine: take them on a quiet one.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from devtools.bench.embeddings_data import (
    history_sizes,
    query_texts,
    store_chunks,
    store_histories,
    store_random_vectors,
)
from devtools.bench.embeddings_report import (
    DrainFigures,
    EmbeddingsResult,
    QueryFigures,
    ReadFigures,
    sorted_ms,
)
from devtools.bench.history import make_history
from gateway.config import Settings
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.base import Embedder, EmbeddingFailed
from gateway.embeddings.from_settings import embedder_for, query_embedder_for
from gateway.embeddings.similarity import QUERY_DEADLINE_S, HybridSimilarity, QueryBudget
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.migrate import upgrade
from gateway.storage.repositories import embeddings

__all__ = ["EmbeddingsBenchError", "EmbeddingsOptions", "run_embeddings_bench"]

DEFAULT_MESSAGES: Final = 1_000
DEFAULT_CHUNKS: Final = 200
DEFAULT_QUERIES: Final = 100
# `embeddings_data.CUSTOMERS` histories of distinct sizes, at least 2 messages each.
MIN_MESSAGES: Final = 20
READ_SIZES: Final = (1_000, 5_000)
READ_REPEAT: Final = 7
# `populate` names stored messages after the history's size: the read customers' stay apart.
READ_SIZE_OFFSET: Final = 10_000_000
# Unlimited for the measurement: the reply's own deadline is counted, not applied.
NO_DEADLINE_S: Final = 3_600.0

Progress = Callable[[str], None]


class EmbeddingsBenchError(Exception):
    """The run cannot be measured (the offline model is missing, say)."""


@dataclass(frozen=True, slots=True)
class EmbeddingsOptions:
    messages: int = DEFAULT_MESSAGES
    chunks: int = DEFAULT_CHUNKS
    queries: int = DEFAULT_QUERIES
    read_sizes: tuple[int, ...] = READ_SIZES

    def __post_init__(self) -> None:
        if self.messages < MIN_MESSAGES:
            raise ValueError(f"messages must be at least {MIN_MESSAGES}")
        if self.chunks < 1 or self.queries < 1:
            raise ValueError("chunks and queries must be at least 1")
        if any(size < 2 for size in self.read_sizes):
            raise ValueError("a read customer needs at least 2 messages")


def _silent(_: str) -> None:
    return None


def shipped_settings() -> Settings:
    """The settings' defaults, untouched by the environment: embeddings as shipped."""
    return Settings.model_construct()


async def _drain(
    sessions: async_sessionmaker[AsyncSession], embedder: Embedder, kind: str, stored: int
) -> DrainFigures:
    loop = BackgroundEmbedder(sessions, embedder)
    cpu = time.process_time()
    burst = await loop.drain()
    return DrainFigures(kind, stored, burst.rows, burst.seconds, time.process_time() - cpu)


async def _time_queries(queries: Embedder, texts: Sequence[str]) -> tuple[QueryFigures, int]:
    """The query figures, and the vectors' dimensions."""
    similarity = HybridSimilarity(
        queries, queries.name, deadline_s=NO_DEADLINE_S, budget=QueryBudget.unlimited()
    )
    cold_wall: list[float] = []
    cold_cpu: list[float] = []
    dimensions = 0
    for text in texts:
        started, cpu = time.perf_counter(), time.process_time()
        vector = await similarity.query_vector(text)
        cold_wall.append((time.perf_counter() - started) * 1000.0)
        cold_cpu.append((time.process_time() - cpu) * 1000.0)
        if vector is None:
            raise EmbeddingsBenchError("the query embedder gave no vector")
        dimensions = int(vector.shape[0])
    cached_wall: list[float] = []
    for text in texts:
        started = time.perf_counter()
        await similarity.query_vector(text)
        cached_wall.append((time.perf_counter() - started) * 1000.0)
    late = sum(ms > QUERY_DEADLINE_S * 1000.0 for ms in cold_wall)
    figures = QueryFigures(sorted_ms(cold_wall), sorted_ms(cold_cpu), sorted_ms(cached_wall), late)
    return figures, dimensions


async def _time_read(
    sessions: async_sessionmaker[AsyncSession], customer_id: str, model: str, size: int
) -> ReadFigures:
    samples: list[float] = []
    rows = 0
    for attempt in range(READ_REPEAT + 1):
        async with sessions() as session:
            started = time.perf_counter()
            vectors = await embeddings.customer_vectors(session, customer_id, model)
            took = (time.perf_counter() - started) * 1000.0
        rows = len(vectors)
        if attempt:  # the first read warms the connection and the page cache
            samples.append(took)
    return ReadFigures(size, rows, statistics.median(samples), READ_REPEAT)


async def run_embeddings_bench(
    options: EmbeddingsOptions, progress: Progress = _silent
) -> EmbeddingsResult:
    """Every measurement; raises `EmbeddingsBenchError` when the offline model cannot embed."""
    settings = shipped_settings()
    # The offline model makes no request: the client is only what the builders take.
    async with httpx.AsyncClient() as http:
        background = embedder_for(settings, http)
        queries = query_embedder_for(settings, http)
        if background is None or queries is None:
            raise EmbeddingsBenchError("embeddings are off in the shipped settings")
        try:
            return await _measure(options, settings, background, queries, progress)
        except EmbeddingFailed as exc:
            raise EmbeddingsBenchError(f"the offline model failed: {exc}") from exc
        finally:
            await background.close()
            await queries.close()


async def _measure(
    options: EmbeddingsOptions,
    settings: Settings,
    background: Embedder,
    queries: Embedder,
    progress: Progress,
) -> EmbeddingsResult:
    counter = TiktokenCounter(load_encoding())
    with tempfile.TemporaryDirectory(prefix="relaydesk-bench-embeddings-") as directory:
        engine = make_engine(f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}")
        try:
            await upgrade(engine)
            sessions = make_sessionmaker(engine)
            histories = [
                make_history(size, seed=index + 1)
                for index, size in enumerate(history_sizes(options.messages))
            ]
            await store_histories(sessions, histories, counter)
            progress(f"stored {options.messages} messages of {len(histories)} customers")
            messages = await _drain(sessions, background, "messages", options.messages)
            progress(f"messages: {messages.rows} rows in {messages.seconds:.1f} s")
            stored_chunks = await store_chunks(sessions, options.chunks)
            chunks = await _drain(sessions, background, "knowledge_chunks", stored_chunks)
            progress(f"knowledge chunks: {chunks.rows} rows in {chunks.seconds:.1f} s")
            query_figures, dimensions = await _time_queries(queries, query_texts(options.queries))
            progress(f"{options.queries} message vectors: p50 {query_figures.cold_p50_ms:.1f} ms")
            reads = []
            for size in options.read_sizes:
                history = replace(make_history(size, seed=99), size=size + READ_SIZE_OFFSET)
                (customer_id,) = await store_histories(sessions, [history], counter)
                await store_random_vectors(sessions, customer_id, background.name, dimensions)
                reads.append(await _time_read(sessions, customer_id, background.name, size))
                progress(f"read of {size} stored vectors: {reads[-1].median_ms:.2f} ms")
        finally:
            await engine.dispose()
    return EmbeddingsResult(
        model=background.name,
        threads=settings.embeddings_threads,
        drains=(messages, chunks),
        queries=query_figures,
        reads=tuple(reads),
    )
