"""A call's raw turns as recall lines: masked before they are indexed, tagged with their
transcript confidence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from context import TiktokenCounter, load_encoding
from context.recall import RecallCandidate, RecallEpisode, rank_candidates, recall
from context.recall_calls import call_turn_candidate
from context.render import summary_tag

COUNTER = TiktokenCounter(load_encoding())
START = datetime(2026, 11, 2, 14, tzinfo=UTC)
CALL = RecallEpisode("call", "phone", "transcript", START, START + timedelta(minutes=5), 0.85)
CHAT = RecallEpisode("chat", "whatsapp", "typed", START, START)


def _heard(index: int, text: str, confidence: float | None) -> RecallCandidate:
    return call_turn_candidate(
        episode_id="call",
        source_message_id=index,
        speaker="Customer",
        text=text,
        at=START + timedelta(seconds=30 * index),
        confidence=confidence,
        masks=[("PED-4471", "order_id")],
    )


def test_a_call_turn_is_masked_before_it_is_indexed() -> None:
    line = _heard(
        1,
        "Me liga no 11 99876-5432 ou escreve para ana.souza@example.com, "
        "CPF 529.982.247-25, pedido PED-4471, refund for the blender",
        0.7,
    )
    assert "99876" not in line.text
    assert "ana.souza" not in line.text
    assert "529.982.247-25" not in line.text
    assert "PED-4471" not in line.text
    assert "[phone]" in line.text and "[email]" in line.text and "[order_id]" in line.text
    assert "refund for the blender" in line.text
    assert line.kind == "turn" and line.confidence == 0.7
    # A masked value is not matched either: asking for it finds nothing.
    assert rank_candidates("ana.souza@example.com 99876-5432", [line]) == ()
    assert rank_candidates("blender refund", [line])


def test_a_call_group_is_tagged_with_its_least_sure_line() -> None:
    pool = [
        _heard(1, "The blender arrived broken", 0.91),
        _heard(2, "I want a refund for the blender", 0.62),
        RecallCandidate("chat", 3, "turn", "Customer", "blender manual please", START),
    ]
    items = recall("blender", pool, {"call": CALL, "chat": CHAT}, 500, COUNTER)
    by_episode = {item.episode_id: item for item in items}
    call = by_episode["call"]
    assert call.modality == "transcript"
    assert call.confidence == 0.62
    assert summary_tag(call).startswith("[phone · transcript · confidence 0.62 · ")
    assert "Customer: I want a refund for the blender" in call.text
    # A typed episode's lines carry no confidence.
    assert by_episode["chat"].confidence is None
    assert summary_tag(by_episode["chat"]).startswith("[whatsapp · typed · ")


def test_a_call_line_without_its_own_confidence_keeps_the_calls() -> None:
    pool = [_heard(1, "The blender arrived broken", None)]
    (item,) = recall("blender", pool, {"call": CALL}, 500, COUNTER)
    assert item.confidence == 0.85
