"""Whisper: the hallucination on silence is flagged, confidences are estimated from logprobs."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from channels.transcripts import (
    LOW_LOGPROB,
    NO_SPEECH,
    PROBABLE_HALLUCINATION,
    REPETITION,
    parse_transcript,
    whisper_flags,
)
from tests.support.fixtures import FIXTURES


def load(name: str) -> Any:
    return json.loads((FIXTURES / "openai_whisper" / name).read_text())


def whisper(payload: Any) -> Any:
    return parse_transcript("whisper", payload, customer_speaker=None)


def test_the_hallucination_on_silence_is_flagged() -> None:
    transcript = whisper(load("wts_medium_empty_audio_hallucination.json"))
    (segment,) = transcript.segments
    assert segment.text == "Thanks for watching!"
    assert PROBABLE_HALLUCINATION in segment.flags and NO_SPEECH in segment.flags
    assert not segment.is_speech
    assert segment.confidence == 0.372  # whisper-timestamped's own segment confidence
    assert transcript.customer_confidence is None  # nothing real was heard


def test_laughter_is_a_weak_decode_not_a_hallucination() -> None:
    transcript = whisper(load("wts_medium_laugh_low_confidence.json"))
    (segment,) = transcript.segments
    assert segment.flags == (LOW_LOGPROB,)
    assert transcript.customer_confidence == pytest.approx(0.146)


def test_temperature_fallback_file() -> None:
    data = load("wts_tiny_apollo11_temperature_fallback.json")
    transcript = whisper(data)
    flagged = [i for i, s in enumerate(transcript.segments) if s.flags]
    # only the last window: no_speech_prob 0.85 with avg_logprob -0.96
    assert flagged == [67]
    assert transcript.segments[67].flags == (NO_SPEECH, PROBABLE_HALLUCINATION)
    wordless = [s for s in transcript.segments if not s.words]
    assert len(wordless) == 25  # SOURCE.md: 25 segments without a `confidence` key
    for segment, raw in zip(transcript.segments, data["segments"], strict=True):
        if "confidence" not in raw:
            assert segment.confidence == pytest.approx(math.exp(raw["avg_logprob"]))
        assert segment.end is not None and segment.start is not None
        assert segment.end >= segment.start  # 49.0 → 48.0 in the file reads as zero-length


def test_api_verbose_json_confidence_is_exp_avg_logprob() -> None:
    example = load("openai_docs_transcription_examples.json")["verbose_json_segment_timestamps"]
    transcript = whisper(example)
    (segment,) = transcript.segments
    assert segment.confidence == pytest.approx(math.exp(-0.2860786020755768))
    assert segment.flags == ()
    assert transcript.language == "english"
    assert transcript.customer_confidence == pytest.approx(segment.confidence)


def test_api_json_with_logprobs_uses_the_mean_token_logprob() -> None:
    example = load("openai_docs_transcription_examples.json")["json_with_logprobs"]
    logprobs = [t["logprob"] for t in example["logprobs"]]
    transcript = whisper(example)
    expected = math.exp(sum(logprobs) / len(logprobs))
    assert transcript.segments[0].confidence == pytest.approx(expected)


def test_word_probability_of_openai_whisper_word_timestamps() -> None:
    payload = {
        "text": " My order is 4471.",
        "language": "en",
        "segments": [
            {
                "id": 0,
                "start": 0.0,
                "end": 2.0,
                "text": " My order is 4471.",
                "avg_logprob": -0.4,
                "compression_ratio": 1.1,
                "no_speech_prob": 0.01,
                "words": [
                    {"word": " My", "start": 0.0, "end": 0.3, "probability": 0.95},
                    {"word": " order", "start": 0.3, "end": 0.7, "probability": 0.9},
                    {"word": " is", "start": 0.7, "end": 0.9, "probability": 0.97},
                    {"word": " 4471.", "start": 0.9, "end": 2.0, "probability": 0.41},
                ],
            }
        ],
    }
    (segment,) = whisper(payload).segments
    assert [w.text for w in segment.words] == ["My", "order", "is", "4471."]
    assert [w.confidence for w in segment.words] == [0.95, 0.9, 0.97, 0.41]
    assert segment.confidence == pytest.approx(math.exp(-0.4))


@pytest.mark.parametrize(
    ("signals", "flags"),
    [
        # the silent-file sample: no_speech 0.67, avg_logprob -0.90
        ((0.666, -0.8999, 0.71, "Thanks for watching!"), (NO_SPEECH, PROBABLE_HALLUCINATION)),
        # Whisper's own silence rule
        ((0.7, -1.2, 1.0, "ok"), (NO_SPEECH, LOW_LOGPROB, PROBABLE_HALLUCINATION)),
        # a looping decode
        ((0.01, -0.3, 2.6, "for for for"), (REPETITION, PROBABLE_HALLUCINATION)),
        # a stock phrase on silence, even confidently decoded
        ((0.65, -0.2, 0.8, "Obrigado por assistir."), (NO_SPEECH, PROBABLE_HALLUCINATION)),
        # the model doubts speech but decodes it well: real speech after a pause
        ((0.65, -0.2, 1.3, "my order did not arrive"), (NO_SPEECH,)),
        # laughter: weak, but the model hears sound
        ((0.556, -1.24, 0.67, "hahahaha"), (LOW_LOGPROB,)),
        ((0.1, -0.3, 1.4, "Thanks for watching!"), ()),
        ((None, None, None, "anything"), ()),
    ],
)
def test_whisper_flags(
    signals: tuple[float | None, float | None, float | None, str], flags: tuple[str, ...]
) -> None:
    no_speech, logprob, ratio, text = signals
    assert (
        whisper_flags(
            no_speech_prob=no_speech, avg_logprob=logprob, compression_ratio=ratio, text=text
        )
        == flags
    )
