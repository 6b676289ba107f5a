"""Vectors for the LoCoMo evaluation's hybrid recall, kept on disk between runs.

The evaluation embeds every recall candidate and every question with the offline model; on a
small machine that is minutes of CPU, the same minutes on every run. `DiskCachedEmbedder` keeps
each vector in one SQLite file under a cache directory outside the repository (by default
``~/.cache/relaydesk/eval-embeddings``), keyed by `gateway.embeddings.cache.content_key` (a
hash of the model, the kind and the text; the texts themselves are not stored), so a warm run
computes nothing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from gateway.embeddings.base import Embedder, EmbeddingFailed, EmbeddingKind, Vector
from gateway.embeddings.cache import content_key
from gateway.embeddings.vectors import from_float32, to_float32

__all__ = [
    "DiskCachedEmbedder",
    "EmbeddingCounts",
    "default_cache_dir",
]

# Texts handed to the model at once (and written to disk together).
_BATCH: Final = 64
_FILE: Final = "vectors.sqlite3"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/relaydesk/eval-embeddings`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "relaydesk" / "eval-embeddings"


class EmbeddingCounts:
    """How many vectors came from the disk and how many were computed."""

    def __init__(self) -> None:
        self.cached = 0
        self.computed = 0


class DiskCachedEmbedder:
    """``inner`` asked only for the texts the cache file does not hold."""

    def __init__(self, inner: Embedder, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._inner = inner
        self._db = sqlite3.connect(directory / _FILE)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)"
        )
        self.counts = EmbeddingCounts()
        self.seconds = 0.0  # spent reading and computing vectors

    @property
    def name(self) -> str:
        return self._inner.name

    def _read(self, keys: Sequence[bytes]) -> dict[bytes, Vector]:
        found: dict[bytes, Vector] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk
            )
            found.update((key, from_float32(vector)) for key, vector in rows)
        return found

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        started = time.perf_counter()
        keys = [content_key(self.name, kind, text) for text in texts]
        found = self._read(sorted(set(keys)))
        self.counts.cached += len(found)
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        pending = list(missing.items())
        for start in range(0, len(pending), _BATCH):
            batch = pending[start : start + _BATCH]
            computed = await self._inner.embed([text for _, text in batch], kind)
            if len(computed) != len(batch):
                raise EmbeddingFailed(f"{len(computed)} vectors for {len(batch)} texts")
            rows = [
                (key, to_float32(vector)) for (key, _), vector in zip(batch, computed, strict=True)
            ]
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            self._db.commit()
            # Handed out as read back, so a cold run ranks exactly as a warm one.
            found.update((key, from_float32(packed)) for key, packed in rows)
            self.counts.computed += len(batch)
        self.seconds += time.perf_counter() - started
        return [found[key] for key in keys]

    async def close(self) -> None:
        self._db.close()
        await self._inner.close()
