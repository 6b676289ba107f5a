"""The vector cache (least recently used first out) and the unit vectors it holds."""

from __future__ import annotations

import math

import pytest

from gateway.embeddings.base import EmbeddingFailed
from gateway.embeddings.cache import VectorCache, content_key
from gateway.embeddings.vectors import unit_vector


def test_the_key_tells_model_kind_and_text_apart() -> None:
    keys = {
        content_key("e5", "query", "prazo"),
        content_key("e5", "passage", "prazo"),
        content_key("e5-large", "query", "prazo"),
        content_key("e5", "query", "prazo "),
        content_key("e5", "query\0passage", ""),
    }

    assert len(keys) == 5
    assert content_key("e5", "query", "prazo") == content_key("e5", "query", "prazo")


def test_the_least_recently_used_vector_goes_first() -> None:
    cache = VectorCache(max_vectors=2)
    a, b, c = (content_key("m", "passage", text) for text in "abc")
    cache.put(a, (1.0, 0.0))
    cache.put(b, (0.0, 1.0))
    assert cache.get(a) == (1.0, 0.0)  # a is now the most recent

    cache.put(c, (0.6, 0.8))

    assert len(cache) == 2
    assert cache.get(b) is None
    assert cache.get(a) == (1.0, 0.0)
    assert cache.get(c) == pytest.approx((0.6, 0.8))


def test_a_cached_vector_is_float32() -> None:
    cache = VectorCache()
    key = content_key("m", "query", "x")
    vector = unit_vector([1.0, 2.0, 3.0])
    cache.put(key, vector)

    assert cache.get(key) == vector  # unit_vector already rounds to float32


def test_unit_vectors_have_length_one() -> None:
    vector = unit_vector([3.0, 4.0])

    assert vector == pytest.approx((0.6, 0.8))
    assert math.fsum(value * value for value in vector) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("values", [[], [0.0, 0.0], [1.0, math.inf], [math.nan, 1.0]])
def test_a_vector_without_a_direction_fails(values: list[float]) -> None:
    with pytest.raises(EmbeddingFailed):
        unit_vector(values)
