"""What every embedding provider offers, and the one error it raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

# Retrieval models embed a question and the passages it is matched against differently
# (e5's "query: " and "passage: " prefixes); a provider maps the kind to what its model wants.
EmbeddingKind = Literal["query", "passage"]

Vector = tuple[float, ...]


class EmbeddingFailed(Exception):
    """The provider could not embed the texts (unreachable, refused, or a malformed answer)."""


class Embedder(Protocol):
    """A text embedding model: same-length unit vectors, one per text, in the texts' order."""

    @property
    def name(self) -> str:
        """The model's name, stored with each vector so a model change is seen."""
        ...

    async def embed(self, texts: Sequence[str], kind: EmbeddingKind) -> list[Vector]:
        """One L2-normalized vector per text; raises `EmbeddingFailed`."""
        ...

    async def close(self) -> None: ...
