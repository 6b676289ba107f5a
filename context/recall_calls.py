"""A call's raw turns as recall candidates.

A call's summary keeps only part of what was said, and what is asked later is often a detail
it left out; its raw turns are recall candidates as well, on the terms its summary reaches the
window: identifiers (e-mails, CPF/CNPJ, phones, UUIDs, CEPs and the ``masks`` given, e.g. order
ids) are masked before the line is indexed, so a masked value is neither shown nor matched.
Each line carries its transcript confidence; `context.recall.pack` tags an episode's lines with
the lowest confidence among them (``[phone · transcript · confidence 0.62 · …]``).

Pure: the caller reads the turns and decides whose turns may be offered.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from context.compaction.identifiers import DEFAULT_REGION, mask_identifiers
from context.recall_score import RecallCandidate

__all__ = ["call_turn_candidate"]


def call_turn_candidate(
    *,
    episode_id: str,
    source_message_id: int,
    speaker: str,
    text: str,
    at: datetime,
    confidence: float | None,
    masks: Iterable[tuple[str, str]] = (),
    region: str = DEFAULT_REGION,
) -> RecallCandidate:
    """The recall line of one transcribed turn of a call: ``text`` masked for identifiers
    (and each ``(value, placeholder)`` of ``masks``), with the turn's ``confidence``."""
    return RecallCandidate(
        episode_id=episode_id,
        source_message_id=source_message_id,
        kind="turn",
        speaker=speaker,
        text=mask_identifiers(text, masks, region),
        at=at,
        confidence=confidence,
    )
