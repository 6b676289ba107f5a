"""The native format (`channels.transcripts.native`) round-trips; every malformed payload is
refused with a reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from channels.base import PayloadInvalid
from channels.transcripts import (
    FORMATS,
    Transcript,
    TranscriptSegment,
    TranscriptWord,
    parse_transcript,
    to_native,
)

NATIVE: dict[str, Any] = {
    "segments": [
        {
            "speaker": "agent",
            "text": "Obrigado por ligar, em que posso ajudar?",
            "start": 0.0,
            "end": 2.4,
            "confidence": 0.97,
            "words": None,
        },
        {
            "speaker": "customer",
            "text": "meu pedido 4471 não chegou",
            "start": 2.9,
            "end": 5.1,
            "confidence": 0.71,
            "words": [
                {"text": "meu", "confidence": 0.98, "start": 2.9, "end": 3.1},
                {"text": "pedido", "confidence": 0.95, "start": 3.1, "end": 3.6},
                {"text": "4471", "confidence": 0.42, "start": 3.7, "end": 4.3},
                {"text": "não", "confidence": 0.9, "start": 4.3, "end": 4.5},
                {"text": "chegou", "confidence": 0.3, "start": 4.5, "end": 5.1},
            ],
        },
        {
            "speaker": "customer",
            "text": "pode verificar?",
            "start": 5.6,
            "end": 6.5,
            "confidence": 0.8,
            "words": None,
        },
    ]
}


def native(payload: Any) -> Transcript:
    return parse_transcript("native", payload, customer_speaker=None)


def test_native_parses_into_typed_segments() -> None:
    transcript = native(NATIVE)
    assert transcript.format == "native"
    assert [s.speaker for s in transcript.segments] == ["agent", "customer", "customer"]
    second = transcript.segments[1]
    assert second == TranscriptSegment(
        speaker="customer",
        text="meu pedido 4471 não chegou",
        start=2.9,
        end=5.1,
        confidence=0.71,
        words=(
            TranscriptWord("meu", 0.98, 2.9, 3.1),
            TranscriptWord("pedido", 0.95, 3.1, 3.6),
            TranscriptWord("4471", 0.42, 3.7, 4.3),
            TranscriptWord("não", 0.9, 4.3, 4.5),
            TranscriptWord("chegou", 0.3, 4.5, 5.1),
        ),
    )
    assert isinstance(second.words, tuple) and second.flags == ()
    # five words weigh 1 each, the wordless customer segment 0.8 x its 2 words
    expected = (0.98 + 0.95 + 0.42 + 0.9 + 0.3 + 0.8 * 2) / 7
    assert transcript.customer_confidence == pytest.approx(expected)


def test_native_round_trips() -> None:
    transcript = native(NATIVE)
    assert to_native(transcript) == NATIVE
    assert native(to_native(transcript)) == transcript


def test_native_extensions_round_trip_flags_language_and_nulls() -> None:
    payload = {
        "language": "pt-BR",
        "segments": [
            {
                "speaker": "customer",
                "text": "Thanks for watching!",
                "start": None,
                "end": None,
                "confidence": None,
                "words": [{"text": "Thanks", "confidence": None, "start": None, "end": None}],
                "flags": ["no_speech", "probable_hallucination"],
            }
        ],
    }
    transcript = native(payload)
    assert transcript.language == "pt-BR"
    assert transcript.segments[0].flags == ("no_speech", "probable_hallucination")
    assert transcript.customer_confidence is None  # flagged as not speech
    assert to_native(transcript) == payload


def test_native_ignores_customer_speaker_and_unknown_keys() -> None:
    payload = copy.deepcopy(NATIVE)
    payload["segments"][0]["sentiment"] = "positive"
    payload["vendor"] = "acme"
    with_speaker = parse_transcript("native", payload, customer_speaker="spk_9")
    assert with_speaker == native(NATIVE)


def test_empty_native_transcript_has_no_confidence() -> None:
    transcript = native({"segments": []})
    assert transcript.segments == () and transcript.customer_confidence is None


def with_segment(**changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(NATIVE)
    for key, value in changes.items():
        if value is ...:
            del payload["segments"][1][key]
        else:
            payload["segments"][1][key] = value
    return payload


def with_word(**changes: Any) -> dict[str, Any]:
    payload = copy.deepcopy(NATIVE)
    payload["segments"][1]["words"][2].update(changes)
    return payload


MALFORMED_NATIVE = [
    ({}, "'segments'"),
    ({"segments": {"speaker": "agent"}}, "segments must be an array"),
    ({"segments": ["hello"]}, "segments[0] must be an object"),
    (with_segment(speaker="bot"), "segments[1].speaker must be 'customer' or 'agent'"),
    (with_segment(speaker=None), "segments[1].speaker"),
    (with_segment(text=...), "segments[1].text is missing"),
    (with_segment(text=42), "segments[1].text must be a string"),
    (with_segment(start="soon"), "segments[1].start must be a number"),
    (with_segment(start=True), "segments[1].start must be a number"),
    (with_segment(start=-1.0), "segments[1].start must not be negative"),
    (with_segment(end=1.0), "segments[1].end (1.0) is before its start (2.9)"),
    (with_segment(end=float("nan")), "segments[1].end must be a finite number"),
    (with_segment(confidence=1.5), "segments[1].confidence must be between 0 and 1"),
    (with_segment(confidence="high"), "segments[1].confidence must be a number"),
    (with_segment(words="meu pedido"), "segments[1].words must be an array"),
    (with_segment(flags="noisy"), "segments[1].flags must be an array"),
    (with_segment(flags=[1]), "segments[1].flags[0] must be a string"),
    (with_word(confidence=-0.1), "segments[1].words[2].confidence must be between 0 and 1"),
    (with_word(text=None), "segments[1].words[2].text must be a string"),
    (with_word(start=4.0, end=3.0), "segments[1].words[2].end (3.0) is before its start"),
    ({"segments": [], "language": 7}, "language must be a string"),
]


@pytest.mark.parametrize(("payload", "reason"), MALFORMED_NATIVE)
def test_malformed_native_payload_is_refused_with_its_reason(payload: Any, reason: str) -> None:
    with pytest.raises(PayloadInvalid) as caught:
        native(payload)
    assert reason in str(caught.value)


def deepgram_with_word(word: dict[str, Any]) -> dict[str, Any]:
    return {"results": {"channels": [{"alternatives": [{"words": [word]}]}]}}


MALFORMED_VENDOR = [
    ("aws_transcribe", {"jobName": "x"}, "'results'"),
    ("aws_transcribe", {"results": {}, "status": "FAILED"}, "job status is 'FAILED'"),
    ("aws_transcribe", {"results": []}, "results must be an object"),
    ("aws_transcribe", {"results": {"items": [{"type": "pronunciation"}]}}, "alternatives"),
    (
        "aws_transcribe",
        {"results": {"items": [{"alternatives": [], "type": "pronunciation"}]}},
        "results.items[0].alternatives is empty",
    ),
    (
        "aws_transcribe",
        {
            "results": {
                "items": [
                    {
                        "start_time": "0.1",
                        "end_time": "0.2",
                        "alternatives": [{"content": "hi", "confidence": "sure"}],
                        "type": "pronunciation",
                    }
                ]
            }
        },
        "results.items[0].alternatives[0].confidence must be a number",
    ),
    ("aws_transcribe", {"results": {"channel_labels": {"channels": 2}}}, "channels must be"),
    ("deepgram", {"metadata": {}}, "'results'"),
    ("deepgram", {"results": {"channels": None}}, "results.channels must be an array"),
    (
        "deepgram",
        deepgram_with_word({"word": "a", "confidence": 2}),
        "results.channels[0].alternatives[0].words[0].confidence must be between 0 and 1",
    ),
    ("whisper", {"task": "transcribe"}, "'segments', 'words' or 'text'"),
    ("whisper", {"segments": [{"start": 0.0}]}, "segments[0].text must be a string"),
    (
        "whisper",
        {"segments": [{"text": "hi", "no_speech_prob": 3}]},
        "segments[0].no_speech_prob must be between 0 and 1",
    ),
    ("whisper", {"text": None}, "text must be a string"),
    (
        "assemblyai",
        {"status": "error", "error": "Download error, unable to download"},
        "status is 'error', not 'completed': Download error",
    ),
    ("assemblyai", {"status": "processing"}, "status is 'processing'"),
    ("assemblyai", {"status": "completed", "words": ["hi"]}, "words[0] must be an object"),
    ("assemblyai", {"status": "completed"}, "'utterances', 'words' or 'text'"),
]


@pytest.mark.parametrize(("format", "payload", "reason"), MALFORMED_VENDOR)
def test_malformed_vendor_payload_is_refused_with_its_reason(
    format: str, payload: Any, reason: str
) -> None:
    with pytest.raises(PayloadInvalid) as caught:
        parse_transcript(format, payload, customer_speaker=None)
    assert reason in str(caught.value)


def test_unknown_format_and_non_object_payloads_are_refused() -> None:
    with pytest.raises(PayloadInvalid, match="unknown transcript format 'srt'"):
        parse_transcript("srt", {}, customer_speaker=None)
    for format in FORMATS:
        with pytest.raises(PayloadInvalid, match="transcript must be an object"):
            parse_transcript(format, ["segments"], customer_speaker=None)  # type: ignore[arg-type]
    with pytest.raises(PayloadInvalid, match="customer_speaker must be a string"):
        parse_transcript("native", NATIVE, customer_speaker=0)  # type: ignore[arg-type]
