"""Vectors already computed, by content hash: any `Embedder` wrapped so a text it embedded
before (same model, same kind) costs no request and no CPU.

The key is a SHA-256 of the model's name, the kind and the text, so the cache never holds the
texts themselves; the value is the vector as float32 bytes (1.5 KiB for 384 dimensions). The
least recently used vector goes first once ``max_vectors`` are held.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from gateway.embeddings.base import Embedder, EmbeddingFailed, EmbeddingKind, Vector
from gateway.embeddings.vectors import from_float32, to_float32

DEFAULT_CACHED_VECTORS = 4096


def content_key(model: str, kind: EmbeddingKind, text: str) -> bytes:
    """What identifies a vector: the model, the kind and the text (NUL-separated, hashed)."""
    return hashlib.sha256(f"{model}\0{kind}\0{text}".encode()).digest()


class VectorCache:
    """A bounded least-recently-used map from `content_key` to a vector."""

    def __init__(self, max_vectors: int = DEFAULT_CACHED_VECTORS) -> None:
        if max_vectors < 1:
            raise ValueError("a vector cache holds at least one vector")
        self._max = max_vectors
        self._vectors: OrderedDict[bytes, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, key: bytes) -> Vector | None:
        packed = self._vectors.get(key)
        if packed is None:
            return None
        self._vectors.move_to_end(key)
        return from_float32(packed)

    def put(self, key: bytes, vector: Vector) -> None:
        self._vectors[key] = to_float32(vector)
        self._vectors.move_to_end(key)
        while len(self._vectors) > self._max:
            self._vectors.popitem(last=False)


class CachedEmbedder:
    """``inner`` asked only for the texts the cache does not hold (each distinct text once)."""

    def __init__(self, inner: Embedder, cache: VectorCache | None = None) -> None:
        self._inner = inner
        self._cache = cache if cache is not None else VectorCache()

    @property
    def name(self) -> str:
        return self._inner.name

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        keys = [content_key(self.name, kind, text) for text in texts]
        found: dict[bytes, Vector] = {}
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            vector = self._cache.get(key)
            if vector is not None:
                found[key] = vector
            else:
                missing.setdefault(key, text)
        if missing:
            computed = await self._inner.embed(list(missing.values()), kind)
            if len(computed) != len(missing):
                raise EmbeddingFailed(f"{len(computed)} vectors for {len(missing)} texts")
            for key, vector in zip(missing, computed, strict=True):
                # Stored as float32 and handed out the same way, so a hit equals a miss.
                self._cache.put(key, vector)
                found[key] = from_float32(to_float32(vector))
        return [found[key] for key in keys]

    async def close(self) -> None:
        await self._inner.close()
