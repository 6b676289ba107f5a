"""The knowledge lines a window carries, numbered as the model sees them (`[k1]`), so that the
numbers the model cites can be turned back into their documents after the reply — and any
number not in the window dropped."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True, slots=True)
class KnowledgeRef:
    """One cited document as the window numbered it: `number` is the `k` in `[k1]`."""

    number: int
    document_id: str
    title: str
    url: str | None
    updated_at: date | None


def marker(number: int) -> str:
    """How a knowledge line is numbered in the window and cited in a reply: ``[k3]``."""
    return f"[k{number}]"
