"""A stored summary becomes the same `SummaryItem` (and tag) for the window and the console."""

from __future__ import annotations

from datetime import UTC, datetime

from context.render import summary_tag
from gateway.memory.summaries import summary_item
from gateway.storage.records import SummaryRecord

UPDATED = datetime(2026, 11, 2, 15, 0, tzinfo=UTC)


def record(channel: str, period_start: datetime | None = None) -> SummaryRecord:
    return SummaryRecord(
        episode_id="ep-1",
        customer_id="c-1",
        summary="Asked about order 4471.",
        last_message_id=9,
        origin_channel=channel,
        transcript_confidence=0.62,
        token_count=7,
        updated_at=UPDATED,
        period_start=period_start,
    )


def test_a_phone_summary_is_a_transcript_with_its_confidence() -> None:
    item = summary_item(record("phone"))
    assert (item.id, item.modality, item.confidence) == ("summary:ep-1", "transcript", 0.62)
    assert summary_tag(item) == "[phone · transcript · confidence 0.62 · 2026-11-02]"


def test_a_typed_channel_summary_drops_a_stray_confidence() -> None:
    item = summary_item(record("whatsapp"))
    assert (item.modality, item.confidence) == ("typed", None)
    assert summary_tag(item) == "[whatsapp · typed · 2026-11-02]"


def test_the_period_falls_back_to_the_last_update() -> None:
    bare = summary_item(record("telegram"))
    assert (bare.started_at, bare.ended_at) == (UPDATED, UPDATED)
    start = datetime(2026, 10, 30, 9, 0, tzinfo=UTC)
    item = summary_item(record("telegram", period_start=start))
    assert (item.started_at, item.ended_at, item.text, item.tokens) == (
        start,
        start,
        "Asked about order 4471.",
        7,
    )
