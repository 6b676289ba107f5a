"""What ``relaydesk bench embeddings`` reports (`devtools.bench.embeddings_bench` measures it):
the background loop's pace per kind of row (`DrainFigures`), the price of a reply's own message
vector, computed and then from the cache (`QueryFigures`), and the read of a customer's stored
vectors (`ReadFigures`); the table and the JSON line."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from devtools.bench.harness import percentile


@dataclass(frozen=True, slots=True)
class DrainFigures:
    """One `BackgroundEmbedder.drain` over the rows of one kind."""

    kind: str  # "messages" or "knowledge_chunks"
    stored: int  # rows written before the drain
    rows: int  # vectors the drain stored
    seconds: float
    cpu_s: float  # the process's CPU over the drain (every thread)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_s_per_1000(self) -> float:
        return self.cpu_s * 1000.0 / self.rows if self.rows else 0.0

    def figures(self) -> dict[str, float | int]:
        return {
            "stored": self.stored,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
            "rows_per_s": round(self.rows_per_s, 2),
            "cpu_s_per_1000_rows": round(self.cpu_s_per_1000, 2),
        }


@dataclass(frozen=True, slots=True)
class QueryFigures:
    """`HybridSimilarity.query_vector` for distinct messages: the first time (computed) and
    the same messages again (the query embedder's cache). Samples sorted, in ms."""

    cold_wall_ms: tuple[float, ...]
    cold_cpu_ms: tuple[float, ...]
    cached_wall_ms: tuple[float, ...]
    late: int  # messages past the reply's deadline (no vector)

    @property
    def queries(self) -> int:
        return len(self.cold_wall_ms)

    @property
    def cold_p50_ms(self) -> float:
        return percentile(self.cold_wall_ms, 0.50)

    @property
    def cold_p99_ms(self) -> float:
        return percentile(self.cold_wall_ms, 0.99)

    @property
    def cpu_ms_per_message(self) -> float:
        return sum(self.cold_cpu_ms) / len(self.cold_cpu_ms) if self.cold_cpu_ms else 0.0

    @property
    def cached_p50_ms(self) -> float:
        return percentile(self.cached_wall_ms, 0.50)

    def figures(self) -> dict[str, float | int]:
        return {
            "queries": self.queries,
            "p50_ms": round(self.cold_p50_ms, 3),
            "p99_ms": round(self.cold_p99_ms, 3),
            "cpu_ms_per_message": round(self.cpu_ms_per_message, 3),
            "cached_p50_ms": round(self.cached_p50_ms, 4),
            "late": self.late,
        }


@dataclass(frozen=True, slots=True)
class ReadFigures:
    """`embeddings.customer_vectors` for a customer with ``messages`` embedded messages: the
    median of ``repeat`` reads, and the rows the read returned."""

    messages: int
    rows: int
    median_ms: float
    repeat: int

    def figures(self) -> dict[str, float | int]:
        return {"rows": self.rows, "median_ms": round(self.median_ms, 3), "repeat": self.repeat}


@dataclass(frozen=True, slots=True)
class EmbeddingsResult:
    model: str
    threads: int
    drains: tuple[DrainFigures, ...]
    queries: QueryFigures
    reads: tuple[ReadFigures, ...]
    database: str = "sqlite"

    def drain(self, kind: str) -> DrainFigures:
        return next(drain for drain in self.drains if drain.kind == kind)

    def table(self) -> str:
        lines = [
            f"embeddings: {self.model}, {self.threads} thread(s), {os.cpu_count()} CPUs, "
            f"{self.database}",
            "background loop (BackgroundEmbedder.drain, nice 19):",
            f"  {'rows of':<16} {'stored':>7} {'embedded':>8} {'seconds':>9} {'rows/s':>8} "
            f"{'CPU s/1k rows':>13}",
        ]
        lines.extend(
            f"  {drain.kind.replace('_', ' '):<16} {drain.stored:>7} {drain.rows:>8} "
            f"{drain.seconds:>9.2f} {drain.rows_per_s:>8.1f} {drain.cpu_s_per_1000:>13.2f}"
            for drain in self.drains
        )
        queries = self.queries
        lines.extend(
            [
                f"reply path (HybridSimilarity.query_vector, normal priority), "
                f"{queries.queries} distinct messages:",
                f"  computed: p50 {queries.cold_p50_ms:.1f} ms, p99 {queries.cold_p99_ms:.1f} "
                f"ms, CPU {queries.cpu_ms_per_message:.1f} ms/message, "
                f"{queries.late} past the deadline",
                f"  cached (same messages again): p50 {queries.cached_p50_ms:.3f} ms",
                "stored vectors read (embeddings.customer_vectors, median):",
            ]
        )
        lines.extend(
            f"  customer with {read.messages:,} messages: {read.rows:,} vectors in "
            f"{read.median_ms:.2f} ms"
            for read in self.reads
        )
        return "\n".join(lines)

    def json_line(self) -> str:
        return json.dumps(
            {
                "model": self.model,
                "threads": self.threads,
                "database": self.database,
                "background": {drain.kind: drain.figures() for drain in self.drains},
                "query": self.queries.figures(),
                "read_ms": {str(read.messages): read.figures() for read in self.reads},
            }
        )


def sorted_ms(samples: Sequence[float]) -> tuple[float, ...]:
    return tuple(sorted(samples))
