"""Ranking stored vectors against a question's vector: cosine similarity, top k.

Every vector a provider hands out is of length 1 (`gateway.embeddings.vectors`), so cosine
similarity is the dot product: one matrix-vector product in NumPy for a customer's or a
tenant's few thousand rows. Pure: the caller reads the matrix and maps rows back to subjects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Match", "top_k"]


@dataclass(frozen=True, slots=True)
class Match:
    """A row of the matrix and its cosine similarity to the question (-1 to 1)."""

    row: int
    score: float


def top_k(
    query: Sequence[float] | npt.NDArray[np.float32], matrix: npt.NDArray[np.float32], k: int
) -> list[Match]:
    """The ``k`` rows of ``matrix`` most similar to ``query``, best first; rows that score the
    same keep the matrix's order (the earlier row first), so a ranking is reproducible.

    Raises ValueError when the query's length is not the matrix's width.
    """
    if k <= 0 or matrix.shape[0] == 0:
        return []
    question = np.asarray(query, dtype=np.float32)
    if question.ndim != 1 or matrix.ndim != 2 or question.shape[0] != matrix.shape[1]:
        raise ValueError(f"a query of {question.shape} against a matrix of {matrix.shape}")
    scores = matrix @ question
    # A stable sort of the negated scores: equal scores stay in row order.
    order = np.argsort(-scores, kind="stable")[:k]
    return [Match(row=int(row), score=float(scores[row])) for row in order]
