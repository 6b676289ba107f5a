"""AssemblyAI transcripts (the body of `GET /v2/transcript/{id}`).

Times are integer milliseconds (converted to seconds), confidences 0–1, speakers letters
(`"A"`, `"B"`) with `speaker_labels=true`; with `multichannel=true` a word or utterance may
carry a `channel` instead. Only a `completed` transcript is accepted.

- `utterances` present and not empty: one turn per utterance (AssemblyAI's utterances are
  already speaker turns) with its own confidence; consecutive ones of one speaker are joined.
- else `words`: grouped by `speaker` (or `channel`), mean word confidence per turn.
- else the whole `text` as one customer segment with the transcript's `confidence`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import _read
from channels.transcripts.model import Transcript, TranscriptWord, mean_confidence
from channels.transcripts.speakers import Turn, assemble, merge_runs, turns_from_words


def parse(payload: Mapping[str, Any], *, customer_speaker: str | None = None) -> Transcript:
    status = payload.get("status")
    if status is not None and status != "completed":
        error = payload.get("error")
        detail = f": {error!s:.120}" if error else ""
        raise PayloadInvalid(
            f"assemblyai transcript status is {status!r:.40}, not 'completed'{detail}"
        )
    language = _read.optional_text(payload.get("language_code"), "language_code")
    utterances = _read.optional_array(payload.get("utterances"), "utterances")
    words = _read.optional_array(payload.get("words"), "words")
    if utterances:
        turns = merge_runs(
            _utterance(_read.mapping(u, f"utterances[{i}]"), f"utterances[{i}]")
            for i, u in enumerate(utterances)
        )
    elif words:
        turns = turns_from_words(
            (_label(_read.mapping(w, f"words[{j}]"), f"words[{j}]"), _word(w, f"words[{j}]"))
            for j, w in enumerate(words)
        )
    elif payload.get("text") is not None:
        turns = [
            Turn(
                label=None,
                text=_read.text(payload["text"], "text").strip(),
                confidence=_read.confidence(payload.get("confidence"), "confidence"),
            )
        ]
    else:
        raise PayloadInvalid("assemblyai transcript needs 'utterances', 'words' or 'text'")
    return assemble(
        turns, format="assemblyai", language=language, customer_speaker=customer_speaker
    )


def _label(raw: Mapping[str, Any], where: str) -> str | None:
    speaker = _read.label(raw.get("speaker"), f"{where}.speaker")
    return speaker if speaker is not None else _read.label(raw.get("channel"), f"{where}.channel")


def _word(raw: object, where: str) -> TranscriptWord:
    word = _read.mapping(raw, where)
    start, end = _read.times(word, where, _read.seconds_from_ms)
    return TranscriptWord(
        text=_read.text(word.get("text"), f"{where}.text"),
        confidence=_read.confidence(word.get("confidence"), f"{where}.confidence"),
        start=start,
        end=end,
    )


def _utterance(utterance: Mapping[str, Any], where: str) -> Turn:
    words = _read.each(utterance.get("words"), f"{where}.words", _word)
    text = _read.optional_text(utterance.get("text"), f"{where}.text")
    confidence = _read.confidence(utterance.get("confidence"), f"{where}.confidence")
    start, end = _read.times(utterance, where, _read.seconds_from_ms)
    return Turn(
        label=_label(utterance, where),
        text=(text if text is not None else " ".join(w.text for w in words)).strip(),
        start=start,
        end=end,
        confidence=confidence if confidence is not None else mean_confidence(words),
        words=words,
    )
