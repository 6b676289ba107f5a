"""The transcript domain objects every format parser produces, and the call-level confidence.

A `Transcript` is a phone call in speaker turns. Each `TranscriptSegment` belongs to the
`"customer"` or the `"agent"`, keeps the recognizer's own confidences (segment and, when the
vendor gives them, per word) and carries quality `flags` that a reader must weigh:

    "no_speech"                the recognizer itself thought the audio was silence
    "low_logprob"              the decode was weak (Whisper `avg_logprob` below -1.0)
    "repetition"               the decode looped (Whisper `compression_ratio` above 2.4)
    "probable_hallucination"   the text is probably not what was said (see `whisper_flags`)

Times are seconds from the start of the call; confidences are probabilities in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Speaker = Literal["customer", "agent"]
SPEAKERS: tuple[Speaker, ...] = ("customer", "agent")

FORMATS = ("native", "aws_transcribe", "deepgram", "whisper", "assemblyai")

NO_SPEECH = "no_speech"
LOW_LOGPROB = "low_logprob"
REPETITION = "repetition"
PROBABLE_HALLUCINATION = "probable_hallucination"

# Segments whose text is probably not speech at all; they say nothing about how well the
# customer was heard, so they stay out of `customer_confidence`. A merely weak decode
# (`low_logprob`) is real, badly heard speech and counts.
NOT_SPEECH_FLAGS = frozenset({NO_SPEECH, PROBABLE_HALLUCINATION})


@dataclass(frozen=True, slots=True)
class TranscriptWord:
    """One recognized word as displayed (punctuation attached), with its confidence if known."""

    text: str
    confidence: float | None = None
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True, slots=True)
class TranscriptSegment:
    """One speaker turn.

    `confidence` is the vendor's own figure for the turn when it has one, else the mean of the
    word confidences, else None. `words` is empty when the vendor gave no word timings.
    """

    speaker: Speaker
    text: str
    start: float | None = None
    end: float | None = None
    confidence: float | None = None
    words: tuple[TranscriptWord, ...] = ()
    flags: tuple[str, ...] = ()

    @property
    def is_speech(self) -> bool:
        """False when a flag says the text is probably not speech (silence, hallucination)."""
        return not NOT_SPEECH_FLAGS.intersection(self.flags)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A parsed call: turns in time order, the customer's overall confidence, the source."""

    segments: tuple[TranscriptSegment, ...]
    customer_confidence: float | None
    format: str
    language: str | None = None

    def by(self, speaker: Speaker) -> tuple[TranscriptSegment, ...]:
        return tuple(s for s in self.segments if s.speaker == speaker)


def mean_confidence(words: Iterable[TranscriptWord]) -> float | None:
    """Unweighted mean of the known word confidences; None when none is known."""
    known = [w.confidence for w in words if w.confidence is not None]
    return sum(known) / len(known) if known else None


def customer_confidence(segments: Iterable[TranscriptSegment]) -> float | None:
    """How well the customer was heard over the whole call, in [0, 1], or None if unknown.

    A word-count-weighted mean: every customer word with a known confidence weighs 1; a
    customer segment without word confidences contributes its segment confidence weighted by
    its number of words (whitespace tokens, at least 1). Segments flagged as not speech
    (`no_speech`, `probable_hallucination`) are left out. Word counts rather than durations,
    because vendors emit zero-length and even backwards segments.
    """
    total = 0.0
    weight = 0
    for segment in segments:
        if segment.speaker != "customer" or not segment.is_speech:
            continue
        known = [w.confidence for w in segment.words if w.confidence is not None]
        if known:
            total += sum(known)
            weight += len(known)
        elif segment.confidence is not None:
            count = max(1, len(segment.text.split()))
            total += segment.confidence * count
            weight += count
    if weight == 0:
        return None
    return min(1.0, max(0.0, total / weight))


def probability_from_logprob(logprob: float) -> float:
    """`exp(logprob)` clipped to [0, 1]: a per-token probability estimate from a mean logprob."""
    if math.isnan(logprob):
        return 0.0
    if logprob >= 0.0:
        return 1.0
    return max(0.0, min(1.0, math.exp(logprob)))
