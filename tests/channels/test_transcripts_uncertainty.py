"""Doubtful words marked: `word?`, `[unclear: w1 w2]`, `4471?`; the noisy radio sample."""

from __future__ import annotations

import json
import re

import pytest

from channels.base import Word
from channels.transcripts import (
    TranscriptSegment,
    TranscriptWord,
    mark_uncertain,
    parse_transcript,
    rendered_text,
)
from tests.support.fixtures import FIXTURES


def words(*pairs: tuple[str, float | None]) -> list[TranscriptWord]:
    return [TranscriptWord(text, confidence) for text, confidence in pairs]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([("my", 0.9), ("order", 0.95)], "my order"),
        ([("my", 0.9), ("order", 0.3), ("arrived", 0.9)], "my order? arrived"),
        ([("the", 0.9), ("camera.", 0.1)], "the camera?."),
        ([("Let's", 0.2), ("take", 0.3), ("that", 0.1), ("camera.", 0.1)],
         "[unclear: Let's take that camera]."),
        ([("Yeah,", 0.079), ("sir.", 0.218), ("Over", 0.9)], "[unclear: Yeah, sir]. Over"),
        ([("order", 0.9), ("4471", 0.4)], "order 4471?"),
        ([("pedido", 0.3), ("4471,", 0.4), ("por", 0.2), ("favor", 0.1)],
         "pedido? 4471?, [unclear: por favor]"),
        ([("code", 0.3), ("PED-4471", 0.2), ("now", 0.3)], "code? PED-4471? now?"),
        # spoken digit by digit: one number, marked when any digit is doubtful
        ([("order", 0.9), ("4", 0.3), ("4", 0.9), ("7", 0.9), ("1.", 0.95)], "order 4471?."),
        ([("order", 0.9), ("4", 0.9), ("4", 0.9), ("7", 0.9), ("1", 0.9)], "order 4 4 7 1"),
        ([("4,", 0.9), ("4,", 0.2), ("7", 0.9), ("done", 0.9)], "447? done"),
        # a sentence end splits digit runs
        ([("option", 0.9), ("1.", 0.3), ("4", 0.3), ("more", 0.9)], "option 1?. 4? more"),
        ([("unknown", None), ("said", 0.1)], "unknown said?"),
        ([("[card number redacted],", 0.1), ("ok", 0.1)], "[card number redacted], ok?"),
        ([("...", 0.1), ("hi", 0.9)], "... hi"),
        ([], ""),
    ],
)  # fmt: skip
def test_marking_convention(given: list[tuple[str, float | None]], expected: str) -> None:
    assert mark_uncertain(words(*given)) == expected


def test_threshold_is_configurable() -> None:
    given = words(("my", 0.55), ("order", 0.75), ("arrived", 0.95))
    assert mark_uncertain(given, threshold=0.5) == "my order arrived"
    assert mark_uncertain(given) == "my? order arrived"
    assert mark_uncertain(given, threshold=0.8) == "[unclear: my order] arrived"
    assert mark_uncertain(given, threshold=0.0) == "my order arrived"
    with pytest.raises(ValueError):
        mark_uncertain(given, threshold=1.5)


def test_works_on_the_channel_word_type() -> None:
    given = [Word("my", 0.9, 0.0, 0.2), Word("order", 0.2, 0.2, 0.5)]
    assert mark_uncertain(given) == "my order?"


def test_rendered_text_uses_words_else_the_plain_text() -> None:
    with_words = TranscriptSegment(
        "customer", "my order", words=tuple(words(("my", 0.9), ("order", 0.1)))
    )
    assert rendered_text(with_words) == "my order?"
    assert rendered_text(with_words, threshold=0.05) == "my order"
    plain = TranscriptSegment("customer", "my order arrived", confidence=0.2)
    assert rendered_text(plain) == "my order arrived"


MARK = re.compile(r"\[unclear: ([^\]]*)\]|(\S+?)\?")


def test_noisy_radio_low_probability_words_are_all_marked() -> None:
    data = json.loads(
        (FIXTURES / "openai_whisper" / "wts_medium_apollo11_noisy_radio.json").read_text()
    )
    transcript = parse_transcript("whisper", data, customer_speaker=None)
    low_words = 0
    marked_words = 0
    for segment in transcript.segments:
        text = rendered_text(segment)
        low = [w for w in segment.words if w.confidence is not None and w.confidence < 0.6]
        low_words += len(low)
        if not low:
            assert text == " ".join(w.text for w in segment.words)
            continue
        for match in MARK.finditer(text):
            marked_words += len(match.group(1).split()) if match.group(1) else 1
        # every confident word is still there, unmarked
        for word in segment.words:
            if word not in low and not any(c.isdigit() for c in word.text):
                assert word.text.rstrip(".,!?") in text
    assert low_words == 168  # counted in the JSON: words with confidence < 0.6
    assert marked_words == low_words
    first = rendered_text(transcript.segments[0])
    assert first == (
        "Apollo? 11, Houston, we got a recommendation for you on your"
        " [unclear: Soyuz-EA GLEM-E-G-E-A]."
    )
    assert rendered_text(transcript.segments[5]) == "[unclear: Let's take that camera]."
