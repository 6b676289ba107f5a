"""OpenAI Whisper output: the API's `verbose_json` / `json` / `diarized_json` and the
`transcribe()` result of the open-source model (also with whisper-timestamped's word
confidences).

Whisper has no diarization: every segment is the customer, unless the segments carry a
`speaker` (`diarized_json`), which then goes through the usual speaker mapping. Segments are
kept one to one, not joined, because Whisper's quality signals are per segment.

Confidence: a segment's own `confidence` (whisper-timestamped) when present, else
`exp(avg_logprob)` clipped to [0, 1], else the mean word confidence. A word's confidence is
its `probability` (openai-whisper `word_timestamps=True`) or `confidence`
(whisper-timestamped); the API's words have none. A plain `json` body with `logprobs` gets
`exp(mean token logprob)`.

Whisper invents text on silence and noise; `whisper_flags` names the suspicious segments.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import _read
from channels.transcripts.model import (
    LOW_LOGPROB,
    NO_SPEECH,
    PROBABLE_HALLUCINATION,
    REPETITION,
    Transcript,
    TranscriptWord,
    mean_confidence,
    probability_from_logprob,
)
from channels.transcripts.speakers import Turn, assemble

# Whisper's own limits (openai-whisper `transcribe()` defaults, also in the API reference).
NO_SPEECH_THRESHOLD = 0.6
LOGPROB_THRESHOLD = -1.0
COMPRESSION_RATIO_THRESHOLD = 2.4
# Below this mean logprob a token was, on average, less likely than a coin flip.
WEAK_LOGPROB_THRESHOLD = math.log(0.5)

# What Whisper writes on silence, learnt from subtitled video (compared after lowering case
# and dropping punctuation). Only consulted when the model itself also reports no speech.
SILENCE_PHRASES = frozenset(
    {
        "you",
        "thank you",
        "thanks",
        "bye",
        "thanks for watching",
        "thank you for watching",
        "thank you so much for watching",
        "please subscribe",
        "like and subscribe",
        "obrigado",
        "obrigada",
        "tchau",
        "obrigado por assistir",
        "obrigada por assistir",
        "inscrevase no canal",
    }
)
SILENCE_PREFIXES = ("subtitles by", "legendas pela", "legendas por", "legendado por", "amaraorg")


def whisper_flags(
    *,
    no_speech_prob: float | None,
    avg_logprob: float | None,
    compression_ratio: float | None,
    text: str,
) -> tuple[str, ...]:
    """Quality flags of one Whisper segment; every rule about Whisper's signals lives here.

    - `no_speech`: `no_speech_prob > 0.6`, the model thinks the window is silence.
    - `low_logprob`: `avg_logprob < -1.0`, a weak decode (Whisper would retry warmer).
    - `repetition`: `compression_ratio > 2.4`, the decode looped (Whisper would retry).
    - `probable_hallucination` when any of:
        1. `no_speech` and `low_logprob` — Whisper's own silence rule (`transcribe()` drops
           such a window; the API returns it);
        2. `repetition` — a looping decode is not what was said;
        3. `no_speech` and `avg_logprob < log(0.5)` — silence more likely than speech and
           tokens on average less likely than a coin flip (the classic " Thanks for
           watching!" on a silent file: no_speech 0.67, avg_logprob -0.90);
        4. `no_speech` and the whole text is a stock silence phrase (`SILENCE_PHRASES`).
    Missing signals (the API's `diarized_json`, plain `json`) raise no flag.
    """
    flags: list[str] = []
    silent = no_speech_prob is not None and no_speech_prob > NO_SPEECH_THRESHOLD
    weak = avg_logprob is not None and avg_logprob < LOGPROB_THRESHOLD
    looping = compression_ratio is not None and compression_ratio > COMPRESSION_RATIO_THRESHOLD
    if silent:
        flags.append(NO_SPEECH)
    if weak:
        flags.append(LOW_LOGPROB)
    if looping:
        flags.append(REPETITION)
    doubtful = avg_logprob is not None and avg_logprob < WEAK_LOGPROB_THRESHOLD
    if (silent and (weak or doubtful or _stock_phrase(text))) or looping:
        flags.append(PROBABLE_HALLUCINATION)
    return tuple(flags)


def _stock_phrase(text: str) -> bool:
    folded = " ".join(re.sub(r"[^\w\s]", "", text.casefold()).split())
    return folded in SILENCE_PHRASES or folded.startswith(SILENCE_PREFIXES)


def parse(payload: Mapping[str, Any], *, customer_speaker: str | None = None) -> Transcript:
    language = _read.optional_text(payload.get("language"), "language")
    if payload.get("segments") is not None:
        segments = _read.array(payload["segments"], "segments")
        turns = [
            _segment(_read.mapping(s, f"segments[{i}]"), f"segments[{i}]")
            for i, s in enumerate(segments)
        ]
    elif payload.get("words") is not None:
        words = tuple(
            _word(w, f"words[{j}]") for j, w in enumerate(_read.array(payload["words"], "words"))
        )
        text = _read.optional_text(payload.get("text"), "text")
        turns = [
            Turn(
                label=None,
                text=(text if text is not None else " ".join(w.text for w in words)).strip(),
                start=words[0].start if words else None,
                end=words[-1].end if words else None,
                confidence=mean_confidence(words),
                words=words,
            )
        ]
    elif "text" in payload:
        turns = [
            Turn(
                label=None,
                text=_read.text(payload["text"], "text").strip(),
                confidence=_logprobs_confidence(payload.get("logprobs")),
            )
        ]
    else:
        raise PayloadInvalid("whisper output needs 'segments', 'words' or 'text'")
    return assemble(turns, format="whisper", language=language, customer_speaker=customer_speaker)


def _segment(segment: Mapping[str, Any], where: str) -> Turn:
    text = _read.text(segment.get("text"), f"{where}.text").strip()
    words = _read.each(segment.get("words"), f"{where}.words", _word)
    avg_logprob = _read.optional_number(segment.get("avg_logprob"), f"{where}.avg_logprob")
    own = _read.confidence(segment.get("confidence"), f"{where}.confidence")
    if own is not None:
        confidence: float | None = own
    elif avg_logprob is not None:
        confidence = probability_from_logprob(avg_logprob)
    else:
        confidence = mean_confidence(words)
    start, end = _read.times(segment, where)
    return Turn(
        label=_read.label(segment.get("speaker"), f"{where}.speaker"),
        text=text,
        start=start,
        end=end,
        confidence=confidence,
        words=words,
        flags=whisper_flags(
            no_speech_prob=_read.confidence(
                segment.get("no_speech_prob"), f"{where}.no_speech_prob"
            ),
            avg_logprob=avg_logprob,
            compression_ratio=_read.optional_number(
                segment.get("compression_ratio"), f"{where}.compression_ratio"
            ),
            text=text,
        ),
    )


def _word(raw: object, where: str) -> TranscriptWord:
    word = _read.mapping(raw, where)
    shown = _read.first(word, "word", "text")
    probability = _read.first(word, "probability", "confidence")
    start, end = _read.times(word, where)
    return TranscriptWord(
        text=_read.text(shown, f"{where}.word").strip(),
        confidence=_read.confidence(probability, f"{where}.probability"),
        start=start,
        end=end,
    )


def _logprobs_confidence(raw: object) -> float | None:
    if raw is None:
        return None
    tokens = _read.array(raw, "logprobs")
    values = [
        _read.number(_read.mapping(t, f"logprobs[{i}]").get("logprob"), f"logprobs[{i}].logprob")
        for i, t in enumerate(tokens)
    ]
    return probability_from_logprob(sum(values) / len(values)) if values else None
