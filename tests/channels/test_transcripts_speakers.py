"""Who is the customer: `customer_speaker`, literal labels, the first-speaker-is-agent default."""

from __future__ import annotations

import json
from typing import Any

import pytest

from channels.base import PayloadInvalid
from channels.transcripts import parse_transcript
from channels.transcripts.speakers import role_map
from tests.support.fixtures import FIXTURES


def load(folder: str, name: str) -> Any:
    return json.loads((FIXTURES / folder / name).read_text())


AWS_DIARIZED = load("aws_transcribe", "docs_batch_diarization_output.json")
AWS_CHANNELS = load("aws_transcribe", "docs_batch_channel_identification_output.json")
DG_DIARIZED = load("deepgram", "dg_nova2_diarize_utterances_spacewalk.json")
AAI = load("assemblyai", "assemblyai_utterances_spacewalk.json")
WHISPER_DIARIZED = load("openai_whisper", "openai_docs_transcription_examples.json")[
    "diarized_json"
]


def roles(format: str, payload: Any, customer_speaker: str | None) -> list[tuple[str, str]]:
    transcript = parse_transcript(format, payload, customer_speaker=customer_speaker)
    return [(s.speaker, s.text) for s in transcript.segments]


def test_default_first_speaker_is_the_agent() -> None:
    # The AWS docs sample has the caller speak first; without customer_speaker the documented
    # default still calls the first voice the agent. The caller fixes it with customer_speaker.
    assert roles("aws_transcribe", AWS_DIARIZED, None) == [
        ("agent", "I've been on hold for an hour."),
        ("customer", "Sorry about that."),
    ]
    assert roles("aws_transcribe", AWS_CHANNELS, None)[0][0] == "agent"


@pytest.mark.parametrize("name", ["spk_0", "SPK_0", " spk_0 ", "0"])
def test_customer_speaker_names_the_customer(name: str) -> None:
    assert roles("aws_transcribe", AWS_DIARIZED, name) == [
        ("customer", "I've been on hold for an hour."),
        ("agent", "Sorry about that."),
    ]


@pytest.mark.parametrize("name", ["ch_0", "0", "channel_0"])
def test_customer_channel_in_a_stereo_recording(name: str) -> None:
    assert [r for r, _ in roles("aws_transcribe", AWS_CHANNELS, name)] == ["customer", "agent"]


def test_unknown_customer_speaker_is_refused_with_the_speakers_listed() -> None:
    with pytest.raises(PayloadInvalid) as caught:
        parse_transcript("aws_transcribe", AWS_DIARIZED, customer_speaker="spk_7")
    assert "customer_speaker 'spk_7'" in str(caught.value)
    assert "spk_0, spk_1" in str(caught.value)
    with pytest.raises(PayloadInvalid, match="speakers: A"):
        parse_transcript("assemblyai", AAI, customer_speaker="B")


def test_deepgram_speakers_and_the_third_voice() -> None:
    # utterance speakers run 0 1 0 1 2 1 2 1; speaker 0 speaks first
    default = [r for r, _ in roles("deepgram", DG_DIARIZED, None)]
    assert default == ["agent"] + ["customer", "agent"] + ["customer"] * 5
    chosen = [r for r, _ in roles("deepgram", DG_DIARIZED, "1")]
    assert chosen == ["agent", "customer"] * 4


def test_single_voice_is_the_customer_and_unlabelled_output_ignores_customer_speaker() -> None:
    assert [r for r, _ in roles("assemblyai", AAI, None)] == ["customer"]
    assert [r for r, _ in roles("assemblyai", AAI, "A")] == ["customer"]
    whisper = {"text": "Hello, my order did not arrive.", "segments": None}
    assert [r for r, _ in roles("whisper", whisper, "spk_1")] == ["customer"]


def test_literal_agent_label_decides_without_customer_speaker() -> None:
    assert roles("whisper", WHISPER_DIARIZED, None) == [
        ("agent", "Thanks for calling OpenAI support."),
        ("customer", "Hi, I'm trying to enable diarization."),
        ("agent", "Happy to walk you through the steps."),
    ]
    assert roles("whisper", WHISPER_DIARIZED, "A") == roles("whisper", WHISPER_DIARIZED, None)


def test_role_map_rules() -> None:
    assert role_map([], None) == {}
    assert role_map(["B", "A"], None) == {"B": "agent", "A": "customer"}
    assert role_map(["B", "A", "C"], None) == {"B": "agent", "A": "customer", "C": "customer"}
    assert role_map(["X"], None) == {"X": "customer"}
    assert role_map(["Customer", "Maria"], None) == {"Customer": "customer", "Maria": "agent"}
    assert role_map(["B", "A"], "a") == {"B": "agent", "A": "customer"}
    # a declared channel that never spoke may still be named the customer
    assert role_map(["ch_0"], "ch_1", known_labels=["ch_0", "ch_1"]) == {
        "ch_0": "agent",
        "ch_1": "customer",
    }
    with pytest.raises(PayloadInvalid):
        role_map(["spk_0", "ch_0"], "0")  # ambiguous without its prefix


def deepgram_stereo(with_utterances: bool) -> dict[str, Any]:
    def word(text: str, start: float, confidence: float) -> dict[str, Any]:
        return {"word": text, "start": start, "end": start + 0.4, "confidence": confidence}

    agent = [word("obrigado", 0.0, 0.99), word("por", 0.4, 0.98), word("ligar", 0.8, 0.97)]
    customer = [word("meu", 1.5, 0.9), word("pedido", 1.9, 0.5), word("atrasou", 2.3, 0.7)]
    later = [word("certo", 3.0, 0.95)]
    results: dict[str, Any] = {
        "channels": [
            {"alternatives": [{"transcript": "meu pedido atrasou", "words": customer}]},
            {"alternatives": [{"transcript": "obrigado por ligar certo", "words": agent + later}]},
        ]
    }
    if with_utterances:
        results["utterances"] = [
            {"start": 0.0, "end": 1.2, "confidence": 0.98, "channel": 1,
             "transcript": "obrigado por ligar", "words": agent},
            {"start": 1.5, "end": 2.7, "confidence": 0.7, "channel": 0,
             "transcript": "meu pedido atrasou", "words": customer},
            {"start": 3.0, "end": 3.4, "confidence": 0.95, "channel": 1,
             "transcript": "certo", "words": later},
        ]  # fmt: skip
    return {"metadata": {"channels": 2}, "results": results}


@pytest.mark.parametrize("with_utterances", [True, False])
def test_deepgram_multichannel_labels_turns_by_channel(with_utterances: bool) -> None:
    payload = deepgram_stereo(with_utterances)
    expected = [
        ("agent", "obrigado por ligar"),
        ("customer", "meu pedido atrasou"),
        ("agent", "certo"),
    ]
    assert roles("deepgram", payload, None) == expected
    assert roles("deepgram", payload, "0") == expected
    transcript = parse_transcript("deepgram", payload, customer_speaker="1")
    assert [s.speaker for s in transcript.segments] == ["customer", "agent", "customer"]
    default = parse_transcript("deepgram", payload, customer_speaker=None)
    assert default.customer_confidence == pytest.approx((0.9 + 0.5 + 0.7) / 3)


def test_aws_speaker_labels_only_in_segments_are_found_by_time() -> None:
    payload = json.loads(json.dumps(AWS_DIARIZED))
    for item in payload["results"]["items"]:
        item.pop("speaker_label", None)
    expected = roles("aws_transcribe", AWS_DIARIZED, "spk_1")
    assert roles("aws_transcribe", payload, "spk_1") == expected
