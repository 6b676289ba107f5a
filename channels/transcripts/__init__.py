"""Phone-call transcripts: vendor JSON in, customer and agent turns out. Pure, no I/O.

`parse_transcript(format, payload, customer_speaker=...)` reads the `transcript` object of a
`POST /v1/transcripts` body in one of `FORMATS`:

    native          Relaydesk's own segments (`channels.transcripts.native`); roles given
    aws_transcribe  Amazon Transcribe batch output (speaker or channel identification)
    deepgram        Deepgram `/v1/listen` response (utterances, diarization, multichannel)
    whisper         OpenAI Whisper API / open-source model output (segments, words, text)
    assemblyai      AssemblyAI transcript (utterances, speaker-labelled words, text)

and raises `channels.base.PayloadInvalid` with the field and the reason when it cannot.

Who is the customer. `customer_speaker` names the vendor speaker or channel that is the
customer, as the vendor spells it: AWS `spk_0` / `ch_0`, Deepgram speaker `0` (or the channel
index of a multichannel response), AssemblyAI `A`, a Whisper diarized label; every other
speaker is the agent. When it is None: a label literally `agent` or `customer` means what it
says; an output with one voice or no diarization at all (Whisper) is all customer; otherwise
**the speaker who speaks first is the agent** — call centres answer the call ("Thank you for
calling ...") — and every other speaker is the customer. Details in `speakers`.

Consecutive words of one speaker form one segment (a turn); Whisper segments stay one to
one because its quality flags are per segment (`whisper_flags`). `customer_confidence` is the
word-weighted mean confidence of the customer's speech, leaving out segments flagged as not
speech. `redact_transcript` takes card numbers and security codes out of texts and words.
`mark_uncertain` / `rendered_text` write text with doubtful words marked: `word?` for one,
`[unclear: w1 w2]` for a run, `4471?` for a doubtful number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from channels.base import PayloadInvalid
from channels.transcripts import assemblyai, aws_transcribe, deepgram, native, whisper
from channels.transcripts.model import (
    FORMATS,
    LOW_LOGPROB,
    NO_SPEECH,
    NOT_SPEECH_FLAGS,
    PROBABLE_HALLUCINATION,
    REPETITION,
    Speaker,
    Transcript,
    TranscriptSegment,
    TranscriptWord,
    customer_confidence,
)
from channels.transcripts.native import to_native
from channels.transcripts.redact import TranscriptRedaction, redact_transcript
from channels.transcripts.uncertainty import (
    DEFAULT_THRESHOLD,
    ScoredWord,
    mark_uncertain,
    rendered_text,
)
from channels.transcripts.whisper import whisper_flags

__all__ = [
    "DEFAULT_THRESHOLD",
    "FORMATS",
    "LOW_LOGPROB",
    "NOT_SPEECH_FLAGS",
    "NO_SPEECH",
    "PROBABLE_HALLUCINATION",
    "REPETITION",
    "ScoredWord",
    "Speaker",
    "Transcript",
    "TranscriptSegment",
    "TranscriptRedaction",
    "TranscriptWord",
    "customer_confidence",
    "mark_uncertain",
    "parse_transcript",
    "redact_transcript",
    "rendered_text",
    "to_native",
    "whisper_flags",
]

_Parser = Callable[..., Transcript]

_PARSERS: dict[str, _Parser] = {
    "native": native.parse,
    "aws_transcribe": aws_transcribe.parse,
    "deepgram": deepgram.parse,
    "whisper": whisper.parse,
    "assemblyai": assemblyai.parse,
}


def parse_transcript(
    format: str, payload: Mapping[str, Any], *, customer_speaker: str | None = None
) -> Transcript:
    """The transcript in `payload` (the body's `transcript` object) read as `format`.

    Raises `PayloadInvalid` for an unknown format, a payload that is not an object, or any
    field of the wrong shape (the message names the field).
    """
    parser = _PARSERS.get(format)
    if parser is None:
        raise PayloadInvalid(
            f"unknown transcript format {format!r:.40}; expected one of {', '.join(FORMATS)}"
        )
    if not isinstance(payload, Mapping):
        raise PayloadInvalid(f"transcript must be an object for format {format!r}")
    if customer_speaker is not None and not isinstance(customer_speaker, str):
        raise PayloadInvalid("customer_speaker must be a string or null")
    return parser(payload, customer_speaker=customer_speaker)
