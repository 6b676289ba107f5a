"""Cosine top k over unit vectors: the nearest rows first, ties in the matrix's order, k
bounded by the rows there are, and a query of another width refused."""

from __future__ import annotations

import numpy as np
import pytest

from gateway.embeddings.ranking import top_k
from gateway.embeddings.vectors import unit_vector


def _matrix(*rows: list[float]) -> np.ndarray:
    return np.array([unit_vector(row) for row in rows], dtype=np.float32)


def test_the_nearest_rows_come_first_with_their_cosine() -> None:
    matrix = _matrix([1, 0], [0, 1], [1, 1], [-1, 0])
    ranked = top_k(unit_vector([1, 0.1]), matrix, 3)
    assert [match.row for match in ranked] == [0, 2, 1]
    assert ranked[0].score == pytest.approx(1 / np.sqrt(1.01), rel=1e-5)
    assert all(a.score >= b.score for a, b in zip(ranked, ranked[1:], strict=False))


def test_equal_scores_keep_the_matrix_order() -> None:
    matrix = _matrix([0, 1], [1, 0], [0, 1], [1, 0], [0, 1])
    assert [match.row for match in top_k([1.0, 0.0], matrix, 4)] == [1, 3, 0, 2]
    # The same on a larger matrix, where a faster unstable sort would mix them.
    many = np.tile(_matrix([1, 0]), (3000, 1))
    assert [match.row for match in top_k([1.0, 0.0], many, 5)] == [0, 1, 2, 3, 4]


def test_k_is_bounded_by_the_rows_and_nothing_is_ranked_from_nothing() -> None:
    matrix = _matrix([1, 0], [0, 1])
    assert len(top_k([1.0, 0.0], matrix, 10)) == 2
    assert top_k([1.0, 0.0], matrix, 0) == []
    assert top_k([1.0, 0.0], np.zeros((0, 2), dtype=np.float32), 3) == []
    [only] = top_k([0.0, 1.0], matrix, 1)
    assert only.row == 1 and only.score == pytest.approx(1.0)


def test_a_query_of_another_width_is_refused() -> None:
    with pytest.raises(ValueError):
        top_k([1.0, 0.0, 0.0], _matrix([1, 0]), 1)
