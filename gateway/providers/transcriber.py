"""Voice-note transcription: an OpenAI-compatible `/audio/transcriptions` client
(`verbose_json`, word timings) when configured; offline, notes stay untranscribed and the
window says so.

The audio is fetched from the channel it came in on (Twilio media URLs, Telegram files); the
result is parsed with the same Whisper reader as call transcripts, so its confidence, doubtful
words and hallucination flags are handled the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

import httpx

from channels.redaction import redact_words
from channels.transcripts import parse_transcript, rendered_text

VOICE_NOT_TRANSCRIBED = "[voice note, not transcribed]"


@dataclass(frozen=True, slots=True)
class VoiceTranscript:
    text: str
    confidence: float | None
    words: tuple[dict[str, float | str | None], ...]
    flags: tuple[str, ...]


class TranscriptionFailed(Exception):
    pass


class Transcriber(Protocol):
    async def transcribe(self, audio: bytes, content_type: str) -> VoiceTranscript: ...


class OpenAITranscriber:
    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout_s: float = 60.0,
    ) -> None:
        self._http = http
        self._url = base_url.rstrip("/") + "/audio/transcriptions"
        self._api_key = api_key
        self._model = model
        self._timeout_s = timeout_s

    async def transcribe(self, audio: bytes, content_type: str) -> VoiceTranscript:
        extension = {"audio/ogg": "ogg", "audio/mpeg": "mp3", "audio/mp4": "m4a"}.get(
            content_type.split(";")[0], "ogg"
        )
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        try:
            response = await self._http.post(
                self._url,
                headers=headers,
                data={
                    "model": self._model,
                    "response_format": "verbose_json",
                    "timestamp_granularities[]": ["word", "segment"],
                },
                files={"file": (f"voice.{extension}", audio, content_type)},
                timeout=self._timeout_s,
            )
        except httpx.HTTPError as exc:
            raise TranscriptionFailed(f"transcription service unreachable: {exc}") from exc
        if response.status_code != 200:
            raise TranscriptionFailed(f"transcription service answered {response.status_code}")
        try:
            parsed = parse_transcript("whisper", response.json())
        except Exception as exc:  # a malformed answer is a failed transcription, not a crash
            raise TranscriptionFailed(f"unreadable transcription: {exc}") from exc
        segments = [s for s in parsed.segments if s.is_speech]
        words: list[dict[str, float | str | None]] = []
        texts = []
        for segment in segments:
            cleaned = redact_words(segment.words).words if segment.words else ()
            texts.append(
                rendered_text(segment if not cleaned else replace(segment, words=tuple(cleaned)))
            )
            words.extend(
                {"text": w.text, "confidence": w.confidence, "start": w.start, "end": w.end}
                for w in cleaned
            )
        flags = tuple(sorted({f for s in parsed.segments for f in s.flags}))
        return VoiceTranscript(
            " ".join(t.strip() for t in texts if t.strip()),
            parsed.customer_confidence,
            tuple(words),
            flags,
        )
