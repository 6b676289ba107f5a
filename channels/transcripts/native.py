"""Relaydesk's own transcript format (`POST /v1/transcripts` with `"format": "native"`).

    {"segments": [{"speaker": "customer" | "agent", "text": str,
                   "start": float, "end": float, "confidence": float | null,
                   "words": [{"text": str, "confidence": float,
                              "start": float, "end": float}] | null}]}

Roles are given, so `customer_speaker` plays no part. Accepted beyond the contract, so that
any parsed transcript can be written back with `to_native` and read again unchanged: a
`"flags"` array of strings per segment, a top-level `"language"`, and null for times and
word confidences a vendor did not provide. Unknown keys are ignored (the contract grows by
extension). Segments are kept exactly as sent, in order, empty text included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import _read
from channels.transcripts.model import (
    SPEAKERS,
    Speaker,
    Transcript,
    TranscriptSegment,
    TranscriptWord,
    customer_confidence,
)


def parse(payload: Mapping[str, Any], *, customer_speaker: str | None = None) -> Transcript:
    del customer_speaker  # native segments already say who speaks
    if "segments" not in payload:
        raise PayloadInvalid("native transcript needs a 'segments' array")
    raw_segments = _read.array(payload["segments"], "segments")
    segments = tuple(
        _segment(_read.mapping(raw, f"segments[{i}]"), f"segments[{i}]")
        for i, raw in enumerate(raw_segments)
    )
    return Transcript(
        segments=segments,
        customer_confidence=customer_confidence(segments),
        format="native",
        language=_read.optional_text(payload.get("language"), "language"),
    )


def _segment(raw: Mapping[str, Any], where: str) -> TranscriptSegment:
    speaker = raw.get("speaker")
    if speaker not in SPEAKERS:
        raise PayloadInvalid(f"{where}.speaker must be 'customer' or 'agent', got {speaker!r:.40}")
    if "text" not in raw:
        raise PayloadInvalid(f"{where}.text is missing")
    start, end = _times(raw, where)
    words = tuple(
        _word(_read.mapping(w, f"{where}.words[{j}]"), f"{where}.words[{j}]")
        for j, w in enumerate(_read.optional_array(raw.get("words"), f"{where}.words"))
    )
    flags = _read.each(raw.get("flags"), f"{where}.flags", _read.text)
    role: Speaker = "customer" if speaker == "customer" else "agent"
    return TranscriptSegment(
        speaker=role,
        text=_read.text(raw["text"], f"{where}.text"),
        start=start,
        end=end,
        confidence=_read.confidence(raw.get("confidence"), f"{where}.confidence"),
        words=words,
        flags=flags,
    )


def _word(raw: Mapping[str, Any], where: str) -> TranscriptWord:
    if "text" not in raw:
        raise PayloadInvalid(f"{where}.text is missing")
    start, end = _times(raw, where)
    return TranscriptWord(
        text=_read.text(raw["text"], f"{where}.text"),
        confidence=_read.confidence(raw.get("confidence"), f"{where}.confidence"),
        start=start,
        end=end,
    )


def _times(raw: Mapping[str, Any], where: str) -> tuple[float | None, float | None]:
    start = _read.optional_number(raw.get("start"), f"{where}.start")
    end = _read.optional_number(raw.get("end"), f"{where}.end")
    if start is not None and start < 0:
        raise PayloadInvalid(f"{where}.start must not be negative, got {start}")
    if start is not None and end is not None and end < start:
        raise PayloadInvalid(f"{where}.end ({end}) is before its start ({start})")
    return start, end


def to_native(transcript: Transcript) -> dict[str, Any]:
    """The transcript in the native format; `parse(to_native(t))` has the same segments."""
    body: dict[str, Any] = {
        "segments": [
            {
                "speaker": s.speaker,
                "text": s.text,
                "start": s.start,
                "end": s.end,
                "confidence": s.confidence,
                "words": [
                    {"text": w.text, "confidence": w.confidence, "start": w.start, "end": w.end}
                    for w in s.words
                ]
                or None,
                **({"flags": list(s.flags)} if s.flags else {}),
            }
            for s in transcript.segments
        ]
    }
    if transcript.language is not None:
        body["language"] = transcript.language
    return body
