"""Unit vectors as the providers hand them out: L2-normalized and rounded to float32, so a
vector read from the cache (or, later, from storage) equals the one first computed."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

from gateway.embeddings.base import EmbeddingFailed, Vector


def unit_vector(values: Sequence[float]) -> Vector:
    """``values`` scaled to length 1 and rounded to float32; raises `EmbeddingFailed` for an
    empty, zero or non-finite vector (no direction to rank by)."""
    if not values:
        raise EmbeddingFailed("an empty vector")
    norm = math.sqrt(math.fsum(value * value for value in values))
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingFailed("a zero or non-finite vector")
    return from_float32(to_float32(tuple(value / norm for value in values)))


def to_float32(vector: Vector) -> bytes:
    """The vector as float32 bytes in the machine's order (4 bytes a dimension)."""
    return array("f", vector).tobytes()


def from_float32(packed: bytes) -> Vector:
    values = array("f")
    values.frombytes(packed)
    return tuple(values)
