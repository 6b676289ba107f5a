"""A parsed call with a card read out loud: texts and words redacted, nothing else touched."""

from __future__ import annotations

from typing import Any

from channels.redaction import CARD_MARKER, SECURITY_CODE_MARKER
from channels.transcripts import parse_transcript, redact_transcript, rendered_text

CARD = "4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1".split()


def call() -> dict[str, Any]:
    said = ["o", "cartão", "é", *CARD, "e", "o", "cvv", "um", "dois", "três"]
    words = [
        {"text": t, "confidence": 0.4 if t == "1" else 0.9, "start": i * 0.3, "end": i * 0.3 + 0.2}
        for i, t in enumerate(said)
    ]
    return {
        "segments": [
            {"speaker": "agent", "text": "Pode informar o cartão?", "start": 0.0, "end": 1.0,
             "confidence": 0.95, "words": None},
            {"speaker": "customer", "text": " ".join(said), "start": 1.2, "end": 8.0,
             "confidence": 0.7, "words": words},
            {"speaker": "customer", "text": "meu pedido é PED-4471", "start": 8.5, "end": 9.5,
             "confidence": 0.8, "words": None},
        ]
    }  # fmt: skip


def test_redact_transcript_redacts_texts_and_words() -> None:
    transcript = parse_transcript("native", call(), customer_speaker=None)
    result = redact_transcript(transcript)
    agent, customer, order = result.transcript.segments
    assert agent == transcript.segments[0]
    assert order == transcript.segments[2]
    expected = f"o cartão é {CARD_MARKER} e o cvv {SECURITY_CODE_MARKER}"
    assert customer.text == expected
    assert " ".join(w.text for w in customer.words) == expected
    assert customer.words[3].start == transcript.segments[1].words[3].start
    assert (customer.start, customer.end, customer.confidence) == (1.2, 8.0, 0.7)
    assert result.redacted_count == 2
    assert result.kinds == ("card_number", "security_code")
    assert result.transcript.customer_confidence == transcript.customer_confidence
    # the marker keeps the low confidence of the first digit but is never marked doubtful
    assert rendered_text(customer) == expected
    assert redact_transcript(result.transcript).redacted_count == 0


def test_nothing_to_redact_returns_an_equal_transcript() -> None:
    payload = call()
    del payload["segments"][1]
    transcript = parse_transcript("native", payload, customer_speaker=None)
    result = redact_transcript(transcript)
    assert result.transcript == transcript and result.redacted_count == 0 and result.kinds == ()
