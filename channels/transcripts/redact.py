"""A transcript with card numbers and security codes redacted (see `channels.redaction`).

Both the text and the words of every segment are redacted, each on its own: a vendor's
segment text (an AssemblyAI utterance, a Deepgram transcript) is not always the words
joined. Times, confidences and flags stay; `customer_confidence` is the recognizer's, kept as
parsed. Redact before `rendered_text`, so markers stay unmarked and whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from channels.redaction import redact, redact_words
from channels.transcripts.model import Transcript, TranscriptSegment


@dataclass(frozen=True, slots=True)
class TranscriptRedaction:
    """The redacted transcript; `redacted_count` counts what was replaced in segment texts."""

    transcript: Transcript
    redacted_count: int
    kinds: tuple[str, ...]


def redact_transcript(transcript: Transcript) -> TranscriptRedaction:
    segments: list[TranscriptSegment] = []
    count = 0
    kinds: list[str] = []
    for segment in transcript.segments:
        text = redact(segment.text)
        words = redact_words(segment.words)
        count += text.redacted_count
        kinds += text.kinds + words.kinds
        if text.redacted_count or words.redacted_count:
            segment = replace(segment, text=text.text, words=words.words)
        segments.append(segment)
    return TranscriptRedaction(
        transcript=replace(transcript, segments=tuple(segments)),
        redacted_count=count,
        kinds=tuple(dict.fromkeys(kinds)),
    )
