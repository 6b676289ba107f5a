"""Voice notes in the turn: transcribed once, stored as a new version of the message.

A voice note arrives as a placeholder message with its audio reference; before its turn is
answered, the audio is fetched from its channel and transcribed. The words (doubtful ones
marked, card numbers redacted) are stored as a new version superseding the placeholder, with
the recognizer's confidence; a failure keeps the placeholder, which the window shows as such.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, Media, MediaFetch, SendFailed
from channels.redaction import redact
from context import TokenCounter
from gateway.providers.transcriber import VOICE_NOT_TRANSCRIBED, Transcriber, TranscriptionFailed
from gateway.storage.records import MessageRecord
from gateway.storage.repositories import messages
from gateway.turns.message_versions import read_version
from outbound import FetchKind

log = logging.getLogger("relaydesk.voice_notes")


def _audio(message: MessageRecord) -> list[Media]:
    return [m for m in message.media if (m.content_type or "").startswith("audio/")]


def is_voice_note(message: MessageRecord) -> bool:
    """A voice note's placeholder, with its audio to transcribe."""
    return message.meta.kind == "voice" and bool(_audio(message))


async def heard_message(
    inbound: MessageRecord,
    *,
    sessions: async_sessionmaker[AsyncSession],
    channel: Channel | None,
    transcriber: Transcriber,
    counter: TokenCounter,
) -> MessageRecord:
    """The stored transcript of a voice note, with its confidence (the message itself for any
    other message, and for a voice note that could not be transcribed): what the customer
    said, and what facts of it are sourced to."""
    if not is_voice_note(inbound):
        return inbound
    audio = _audio(inbound)
    async with sessions() as session:
        done = await messages.find_by_provider_id(
            session, inbound.channel, f"transcript:{inbound.id}"
        )
    if done is not None:
        return done
    if not isinstance(channel, MediaFetch):
        return inbound
    try:
        note = Media(audio[0].url, audio[0].content_type)
        data, content_type = await channel.fetch_media(note, FetchKind.AUDIO)
        heard = await transcriber.transcribe(data, content_type)
    except (SendFailed, TranscriptionFailed) as exc:
        log.warning("voice note not transcribed", extra={"fields": {"error": str(exc)}})
        return inbound
    text = redact(heard.text).text or VOICE_NOT_TRANSCRIBED
    async with sessions.begin() as session:
        return await messages.append_message(
            session,
            read_version(
                inbound,
                text,
                counter=counter,
                version_id=f"transcript:{inbound.id}",
                meta=replace(inbound.meta, kind="voice_transcript", flags=tuple(heard.flags)),
                transcript_confidence=heard.confidence,
                words={"words": list(heard.words)} if heard.words else None,
            ),
        )
