"""A stored episode summary as the context engine's `SummaryItem`: the one conversion the
window and the console both use, so a summary is tagged the same wherever it shows."""

from __future__ import annotations

from context import TRANSCRIPT_CHANNELS, SummaryItem
from gateway.storage.records import SummaryRecord

__all__ = ["summary_item"]


def summary_item(record: SummaryRecord) -> SummaryItem:
    """The summary of ``record``'s episode, id ``summary:<episode id>``. A summary of a
    transcript channel (a phone call) is a transcript and keeps its confidence; any other is
    typed. Its period falls back to the summary's last update when none is stored."""
    start = record.period_start or record.updated_at
    transcript = record.origin_channel in TRANSCRIPT_CHANNELS
    return SummaryItem(
        id=f"summary:{record.episode_id}",
        episode_id=record.episode_id,
        channel=record.origin_channel,
        modality="transcript" if transcript else "typed",
        started_at=start,
        ended_at=record.period_end or start,
        text=record.summary,
        tokens=record.token_count,
        confidence=record.transcript_confidence if transcript else None,
    )
