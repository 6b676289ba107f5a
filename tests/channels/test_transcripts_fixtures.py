"""Every recorded vendor transcript parses, with the turns and confidences the JSON implies.

Two independent checks per file: counts hard-coded after reading the JSON by hand (the
`EXPECTED` table, verified against the files and their SOURCE.md), and the same figures
recomputed here by a deliberately simple reading of the raw JSON that shares no code with
the parsers (`simple_*` below).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from channels.transcripts import Transcript, parse_transcript, to_native
from tests.support.fixtures import FIXTURES

# folder → format name in `POST /v1/transcripts`
FOLDERS = {
    "aws_transcribe": "aws_transcribe",
    "deepgram": "deepgram",
    "openai_whisper": "whisper",
    "assemblyai": "assemblyai",
}

DOCS = "openai_docs_transcription_examples.json"

# (folder, file, example key or "") → (customer segments, agent segments, words, min word conf)
# Hard-coded from reading the JSON; the default speaker mapping (first speaker = agent).
EXPECTED: dict[tuple[str, str, str], tuple[int, int, int, float | None]] = {
    ("aws_transcribe", "docs_batch_channel_identification_output.json", ""): (1, 1, 10, 0.918),
    ("aws_transcribe", "docs_batch_diarization_output.json", ""): (1, 1, 10, 0.902),
    # 2 channels; ch_1 reads first, the channels then alternate 7 times
    ("aws_transcribe", "tscribe_sample_02_channel_identification.json", ""): (3, 4, 354, 0.442),
    # 24 diarized segments of spk_0/1/2 form 7 runs: 0 1 0 2 0 1 0
    ("aws_transcribe", "tscribe_sample_03_speaker_identification.json", ""): (3, 4, 354, 0.428),
    # 22 utterances of speakers 0/1/2 form 8 runs: 0 1 0 1 2 1 2 1
    ("deepgram", "dg_nova2_diarize_utterances_spacewalk.json", ""): (6, 2, 226, 0.369),
    # 6 utterances, no speakers: one voice, one turn
    ("deepgram", "dg_nova2_utterances_spacewalk.json", ""): (1, 0, 62, 0.5),
    ("deepgram", "dg_nova3_smartformat_preamble.json", ""): (1, 0, 52, 0.607),
    ("assemblyai", "assemblyai_utterances_spacewalk.json", ""): (1, 0, 60, 0.531),
    ("assemblyai", "assemblyai_transcript_no_utterances_spacewalk.json", ""): (1, 0, 60, 0.531),
    ("openai_whisper", "wts_medium_apollo11_noisy_radio.json", ""): (47, 0, 217, 0.0),
    ("openai_whisper", "wts_medium_empty_audio_hallucination.json", ""): (1, 0, 3, 0.06),
    ("openai_whisper", "wts_medium_laugh_low_confidence.json", ""): (1, 0, 1, 0.146),
    ("openai_whisper", "wts_tiny_apollo11_temperature_fallback.json", ""): (68, 0, 152, 0.0),
    ("openai_whisper", DOCS, "verbose_json_segment_timestamps"): (1, 0, 0, None),
    ("openai_whisper", DOCS, "verbose_json_word_timestamps"): (1, 0, 2, None),
    # segments labelled "agent", "A", "agent": the literal label decides
    ("openai_whisper", DOCS, "diarized_json"): (1, 2, 0, None),
    ("openai_whisper", DOCS, "json_with_logprobs"): (1, 0, 0, None),
    ("openai_whisper", DOCS, "json_default"): (1, 0, 0, None),
}  # fmt: skip


def load(folder: str, name: str) -> Any:
    return json.loads((FIXTURES / folder / name).read_text())


def cases() -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for folder in FOLDERS:
        for path in sorted((FIXTURES / folder).glob("*.json")):
            data = json.loads(path.read_text())
            if path.name == DOCS:
                found += [(folder, path.name, key) for key in data if not key.startswith("_")]
            else:
                found.append((folder, path.name, ""))
    return found


def payload_of(folder: str, name: str, key: str) -> Any:
    data = load(folder, name)
    return data[key] if key else data


def parsed(folder: str, name: str, key: str = "") -> Transcript:
    return parse_transcript(FOLDERS[folder], payload_of(folder, name, key), customer_speaker=None)


def test_every_fixture_file_has_an_expectation() -> None:
    assert set(cases()) == set(EXPECTED)
    assert len(EXPECTED) == 18


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"{c[1]}:{c[2]}" if c[2] else c[1])
def test_fixture_parses_with_the_expected_turns(case: tuple[str, str, str]) -> None:
    folder, name, key = case
    transcript = parsed(folder, name, key)
    customers, agents, words, lowest = EXPECTED[case]
    assert len(transcript.by("customer")) == customers
    assert len(transcript.by("agent")) == agents
    all_words = [w for s in transcript.segments for w in s.words]
    assert len(all_words) == words
    known = [w.confidence for w in all_words if w.confidence is not None]
    assert (round(min(known), 3) if known else None) == lowest
    assert transcript.format == FOLDERS[folder]
    for segment in transcript.segments:
        assert segment.text and segment.text == segment.text.strip()
        assert segment.confidence is None or 0.0 <= segment.confidence <= 1.0
        if segment.start is not None and segment.end is not None:
            assert segment.end >= segment.start
    # consecutive turns of one vendor speaker are joined, so roles alternate unless two
    # vendor speakers share a role (Deepgram's three-speaker file) or Whisper keeps its cuts
    if folder in ("aws_transcribe", "assemblyai"):
        roles = [s.speaker for s in transcript.segments]
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False))


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"{c[1]}:{c[2]}" if c[2] else c[1])
def test_every_fixture_round_trips_through_the_native_format(case: tuple[str, str, str]) -> None:
    transcript = parsed(*case)
    again = parse_transcript("native", to_native(transcript), customer_speaker=None)
    assert again.segments == transcript.segments
    assert again.customer_confidence == transcript.customer_confidence
    assert again.language == transcript.language


# --- an independent, simple reading of the raw JSON -----------------------------------


def runs(labels: list[Any]) -> list[Any]:
    out: list[Any] = []
    for label in labels:
        if not out or out[-1] != label:
            out.append(label)
    return out


def simple_aws(data: dict[str, Any]) -> tuple[int, int, float]:
    results = data["results"]
    if "channel_labels" in results:
        timed = [
            (float(item["start_time"]), channel["channel_label"], item)
            for channel in results["channel_labels"]["channels"]
            for item in channel["items"]
            if item["type"] == "pronunciation"
        ]
        timed.sort(key=lambda t: t[0])
        labelled = [(label, item) for _, label, item in timed]
    else:
        segments = results["speaker_labels"]["segments"]
        labelled = []
        for item in results["items"]:
            if item["type"] != "pronunciation":
                continue
            at = float(item["start_time"])
            owner = next(
                s["speaker_label"]
                for s in segments
                if float(s["start_time"]) <= at <= float(s["end_time"])
            )
            labelled.append((owner, item))
    turns = runs([label for label, _ in labelled])
    agent = turns[0]
    customer = [float(i["alternatives"][0]["confidence"]) for lab, i in labelled if lab != agent]
    return (
        sum(1 for t in turns if t != agent),
        sum(1 for t in turns if t == agent),
        sum(customer) / len(customer),
    )


@pytest.mark.parametrize(
    "name",
    [
        "docs_batch_channel_identification_output.json",
        "docs_batch_diarization_output.json",
        "tscribe_sample_02_channel_identification.json",
        "tscribe_sample_03_speaker_identification.json",
    ],
)
def test_aws_against_a_simple_reading(name: str) -> None:
    customers, agents, confidence = simple_aws(load("aws_transcribe", name))
    transcript = parsed("aws_transcribe", name)
    assert len(transcript.by("customer")) == customers
    assert len(transcript.by("agent")) == agents
    assert transcript.customer_confidence == pytest.approx(confidence)


@pytest.mark.parametrize(
    "name",
    [
        "dg_nova2_diarize_utterances_spacewalk.json",
        "dg_nova2_utterances_spacewalk.json",
        "dg_nova3_smartformat_preamble.json",
    ],
)
def test_deepgram_against_a_simple_reading(name: str) -> None:
    data = load("deepgram", name)
    words = data["results"]["channels"][0]["alternatives"][0]["words"]
    first = words[0].get("speaker")
    customer = [w["confidence"] for w in words if first is None or w.get("speaker") != first]
    transcript = parsed("deepgram", name)
    assert transcript.customer_confidence == pytest.approx(sum(customer) / len(customer))
    utterances = data["results"].get("utterances")
    if utterances:
        turns = runs([u.get("speaker") for u in utterances])
        diarized = len(set(turns)) > 1
        assert len(transcript.segments) == len(turns)
        assert len(transcript.by("agent")) == sum(1 for t in turns if diarized and t == first)


@pytest.mark.parametrize(
    "name",
    ["assemblyai_utterances_spacewalk.json", "assemblyai_transcript_no_utterances_spacewalk.json"],
)
def test_assemblyai_against_a_simple_reading(name: str) -> None:
    data = load("assemblyai", name)
    transcript = parsed("assemblyai", name)
    confidences = [w["confidence"] for w in data["words"]]
    assert transcript.customer_confidence == pytest.approx(sum(confidences) / len(confidences))
    assert transcript.language == "en"
    (segment,) = transcript.segments
    assert segment.start == data["words"][0]["start"] / 1000
    assert segment.end == data["words"][-1]["end"] / 1000
    if data["utterances"]:
        assert segment.text == data["utterances"][0]["text"]
        assert segment.confidence == data["utterances"][0]["confidence"]


@pytest.mark.parametrize(
    "name",
    [
        "wts_medium_apollo11_noisy_radio.json",
        "wts_tiny_apollo11_temperature_fallback.json",
        "wts_medium_laugh_low_confidence.json",
    ],
)
def test_whisper_customer_confidence_against_a_simple_reading(name: str) -> None:
    data = load("openai_whisper", name)
    total = weight = 0.0
    for segment in data["segments"]:
        silent = segment["no_speech_prob"] > 0.6 and segment["avg_logprob"] < math.log(0.5)
        if silent:
            continue
        if segment.get("words"):
            total += sum(w["confidence"] for w in segment["words"])
            weight += len(segment["words"])
        else:
            estimate = segment.get("confidence", math.exp(segment["avg_logprob"]))
            total += estimate * len(segment["text"].split())
            weight += len(segment["text"].split())
    assert parsed("openai_whisper", name).customer_confidence == pytest.approx(total / weight)


def test_fixture_folders_are_where_the_support_module_says() -> None:
    assert isinstance(FIXTURES, Path)
    for folder in FOLDERS:
        assert (FIXTURES / folder / "SOURCE.md").is_file()
