"""Amazon Transcribe batch job output (`{jobName, results: {transcripts, items, ...}, status}`).

Every number is a string (`"start_time": "4.87"`, `"confidence": "0.902"`). `items` are
pronunciations (words, with times and `alternatives[0].confidence`) and punctuations (no
times, confidence `"0.0"`): a punctuation is glued to the word before it and is never a word
of its own, so it cannot drag confidences down.

Speakers come from one of:

- `results.channel_labels.channels[]` (channel identification, the usual call-centre stereo
  recording): each channel's items carry its label (`ch_0`, `ch_1`); words of all channels
  are interleaved by start time.
- `results.speaker_labels` (diarization): an item's own `speaker_label` (newer outputs),
  else the `speaker_labels.segments[].items[]` entry with the same start and end time (older
  outputs), else the segment whose time span holds the word, else the previous speaker.
- neither: a single voice, all customer.

Consecutive words of one label form a turn. Segment confidence is the mean word confidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import _read
from channels.transcripts.model import Transcript, TranscriptWord
from channels.transcripts.speakers import Turn, assemble, turn_of_words, turns_from_words


@dataclass(frozen=True, slots=True)
class _Entry:
    word: TranscriptWord
    item: Mapping[str, Any]


def parse(payload: Mapping[str, Any], *, customer_speaker: str | None = None) -> Transcript:
    status = payload.get("status")
    if status is not None and status != "COMPLETED":
        raise PayloadInvalid(f"aws_transcribe job status is {status!r:.40}, not 'COMPLETED'")
    if "results" not in payload:
        raise PayloadInvalid("aws_transcribe output needs a 'results' object")
    results = _read.mapping(payload["results"], "results")
    language = _read.optional_text(results.get("language_code"), "results.language_code")
    known: list[str] = []
    if results.get("channel_labels") is not None:
        turns = _by_channel(results["channel_labels"], known)
    else:
        entries = _entries(
            _read.optional_array(results.get("items"), "results.items"), "results.items"
        )
        if results.get("speaker_labels") is not None:
            turns = _by_speaker(results["speaker_labels"], entries, known)
        elif entries:
            turns = [turn_of_words(None, [e.word for e in entries])]
        else:
            turns = [Turn(label=None, text=_whole_text(results))]
    return assemble(
        turns,
        format="aws_transcribe",
        language=language,
        customer_speaker=customer_speaker,
        known_labels=known,
    )


def _entries(items: Sequence[Any], where: str) -> list[_Entry]:
    """Words with their raw item; punctuation glued to the word before (or after, at start)."""
    entries: list[_Entry] = []
    pending = ""
    for i, raw in enumerate(items):
        item = _read.mapping(raw, f"{where}[{i}]")
        alternatives = _read.array(item.get("alternatives"), f"{where}[{i}].alternatives")
        if not alternatives:
            raise PayloadInvalid(f"{where}[{i}].alternatives is empty")
        best = _read.mapping(alternatives[0], f"{where}[{i}].alternatives[0]")
        content = _read.text(best.get("content"), f"{where}[{i}].alternatives[0].content")
        if item.get("type") == "punctuation":
            if entries:
                last = entries[-1]
                glued = TranscriptWord(
                    last.word.text + content, last.word.confidence, last.word.start, last.word.end
                )
                entries[-1] = _Entry(glued, last.item)
            else:
                pending += content
            continue
        start, end = _read.ordered(
            _read.optional_number(item.get("start_time"), f"{where}[{i}].start_time"),
            _read.optional_number(item.get("end_time"), f"{where}[{i}].end_time"),
        )
        confidence = _read.confidence(
            best.get("confidence"), f"{where}[{i}].alternatives[0].confidence"
        )
        entries.append(_Entry(TranscriptWord(pending + content, confidence, start, end), item))
        pending = ""
    return entries


def _by_channel(raw: object, known: list[str]) -> list[Turn]:
    channel_labels = _read.mapping(raw, "results.channel_labels")
    channels = _read.array(channel_labels.get("channels"), "results.channel_labels.channels")
    stream: list[tuple[float, str, TranscriptWord]] = []
    for c, raw_channel in enumerate(channels):
        where = f"results.channel_labels.channels[{c}]"
        channel = _read.mapping(raw_channel, where)
        label = _read.label(channel.get("channel_label"), f"{where}.channel_label") or f"ch_{c}"
        known.append(label)
        at = 0.0
        for entry in _entries(_read.optional_array(channel.get("items"), f"{where}.items"), where):
            at = entry.word.start if entry.word.start is not None else at
            stream.append((at, label, entry.word))
    stream.sort(key=lambda e: e[0])  # stable: ties keep channel order
    return turns_from_words((label, word) for _, label, word in stream)


def _by_speaker(raw: object, entries: list[_Entry], known: list[str]) -> list[Turn]:
    speaker_labels = _read.mapping(raw, "results.speaker_labels")
    speakers = speaker_labels.get("speakers")
    if isinstance(speakers, int) and not isinstance(speakers, bool) and 0 < speakers <= 100:
        known.extend(f"spk_{n}" for n in range(speakers))
    by_time: dict[tuple[str, str], str] = {}
    spans: list[tuple[float, float, str]] = []
    segments = _read.optional_array(
        speaker_labels.get("segments"), "results.speaker_labels.segments"
    )
    for s, raw_segment in enumerate(segments):
        where = f"results.speaker_labels.segments[{s}]"
        segment = _read.mapping(raw_segment, where)
        label = _read.label(segment.get("speaker_label"), f"{where}.speaker_label")
        if label is None:
            continue
        start = _read.optional_number(segment.get("start_time"), f"{where}.start_time")
        end = _read.optional_number(segment.get("end_time"), f"{where}.end_time")
        if start is not None and end is not None:
            spans.append((start, end, label))
        for raw_item in _read.optional_array(segment.get("items"), f"{where}.items"):
            item = _read.mapping(raw_item, f"{where}.items[]")
            by_time[(str(item.get("start_time")), str(item.get("end_time")))] = label
    labelled: list[tuple[str | None, TranscriptWord]] = []
    previous: str | None = None
    for i, entry in enumerate(entries):
        label = (
            _read.label(entry.item.get("speaker_label"), f"results.items[{i}].speaker_label")
            or by_time.get((str(entry.item.get("start_time")), str(entry.item.get("end_time"))))
            or _span_label(spans, entry.word.start)
            or previous
        )
        previous = label
        labelled.append((label, entry.word))
    return turns_from_words(labelled)


def _span_label(spans: list[tuple[float, float, str]], at: float | None) -> str | None:
    if at is None:
        return None
    for start, end, label in spans:
        if start <= at <= end:
            return label
    return None


def _whole_text(results: Mapping[str, Any]) -> str:
    transcripts = _read.optional_array(results.get("transcripts"), "results.transcripts")
    parts = [
        _read.text(
            _read.mapping(t, "results.transcripts[]").get("transcript"),
            "results.transcripts[].transcript",
        )
        for t in transcripts
    ]
    return " ".join(p.strip() for p in parts).strip()
