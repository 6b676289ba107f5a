"""Deepgram pre-recorded (`/v1/listen`) responses (`{metadata, results: {channels, utterances?}}`).

Times are float seconds, `speaker` is an integer (with `diarize=true`), `channel` an index.
A word's display text is its `punctuated_word` (smart format) when present, else `word`.

The label of a turn is the channel index (`"0"`, `"1"`) when the response has more than one
channel (`multichannel=true`: one party per channel), else the diarized speaker (`"0"`, `"1"`,
...), else none (one voice, all customer).

- With `results.utterances` (`utterances=true`): one turn per utterance; Deepgram cuts an
  utterance at every pause, so consecutive utterances of one label are joined into one turn.
  A single utterance keeps Deepgram's own confidence; a joined turn takes the mean word
  confidence.
- Without: the words of the first alternative of every channel (paragraphs group the same
  words by sentence and add nothing), interleaved by start time and grouped by label; a
  channel without words contributes its whole `transcript`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import _read
from channels.transcripts.model import Transcript, TranscriptWord, mean_confidence
from channels.transcripts.speakers import Turn, assemble, merge_runs, turns_from_words


def parse(payload: Mapping[str, Any], *, customer_speaker: str | None = None) -> Transcript:
    if "results" not in payload:
        raise PayloadInvalid("deepgram response needs a 'results' object")
    results = _read.mapping(payload["results"], "results")
    metadata = _read.mapping(payload.get("metadata") or {}, "metadata")
    channels = _read.array(results.get("channels"), "results.channels")
    declared = metadata.get("channels")
    count = len(channels)
    if isinstance(declared, int) and not isinstance(declared, bool) and declared <= 64:
        count = max(count, declared)
    multichannel = count > 1
    utterances = _read.optional_array(results.get("utterances"), "results.utterances")
    if utterances:
        turns = merge_runs(
            _utterance(_read.mapping(u, f"results.utterances[{i}]"), i, multichannel)
            for i, u in enumerate(utterances)
        )
    else:
        turns = _from_channels(channels, multichannel)
    return assemble(
        turns,
        format="deepgram",
        language=_language(channels),
        customer_speaker=customer_speaker,
        known_labels=[str(c) for c in range(count)] if multichannel else [],
    )


def _word(raw: object, where: str) -> TranscriptWord:
    word = _read.mapping(raw, where)
    shown = _read.first(word, "punctuated_word", "word")
    start, end = _read.times(word, where)
    return TranscriptWord(
        text=_read.text(shown, f"{where}.word"),
        confidence=_read.confidence(word.get("confidence"), f"{where}.confidence"),
        start=start,
        end=end,
    )


def _label(raw: Mapping[str, Any], multichannel: bool, where: str) -> str | None:
    if multichannel:
        return _read.label(raw.get("channel"), f"{where}.channel")
    return _read.label(raw.get("speaker"), f"{where}.speaker")


def _utterance(utterance: Mapping[str, Any], i: int, multichannel: bool) -> Turn:
    where = f"results.utterances[{i}]"
    words = _read.each(utterance.get("words"), f"{where}.words", _word)
    transcript = _read.optional_text(utterance.get("transcript"), f"{where}.transcript")
    text = transcript if transcript is not None else " ".join(w.text for w in words)
    confidence = _read.confidence(utterance.get("confidence"), f"{where}.confidence")
    start, end = _read.times(utterance, where)
    return Turn(
        label=_label(utterance, multichannel, where),
        text=text.strip(),
        start=start,
        end=end,
        confidence=confidence if confidence is not None else mean_confidence(words),
        words=words,
    )


def _from_channels(channels: Sequence[Any], multichannel: bool) -> list[Turn]:
    stream: list[tuple[float, str | None, TranscriptWord]] = []
    whole: list[Turn] = []
    for c, raw_channel in enumerate(channels):
        where = f"results.channels[{c}]"
        channel = _read.mapping(raw_channel, where)
        alternatives = _read.array(channel.get("alternatives"), f"{where}.alternatives")
        if not alternatives:
            continue
        alternative = _read.mapping(alternatives[0], f"{where}.alternatives[0]")
        where = f"{where}.alternatives[0]"
        words = _read.optional_array(alternative.get("words"), f"{where}.words")
        at = 0.0
        for j, raw_word in enumerate(words):
            word = _word(raw_word, f"{where}.words[{j}]")
            label = (
                str(c)
                if multichannel
                else _label(_read.mapping(raw_word, f"{where}.words[{j}]"), False, where)
            )
            at = word.start if word.start is not None else at
            stream.append((at, label, word))
        if not words:
            text = _read.optional_text(alternative.get("transcript"), f"{where}.transcript")
            whole.append(
                Turn(
                    label=str(c) if multichannel else None,
                    text=(text or "").strip(),
                    confidence=_read.confidence(
                        alternative.get("confidence"), f"{where}.confidence"
                    ),
                )
            )
    stream.sort(key=lambda e: e[0])  # stable: ties keep channel order
    return turns_from_words((label, word) for _, label, word in stream) + whole


def _language(channels: Sequence[Any]) -> str | None:
    for channel in channels:
        if isinstance(channel, Mapping):
            detected = channel.get("detected_language")
            if isinstance(detected, str) and detected:
                return detected
    return None
