"""Store a finished phone call: one `phone` episode, one message per speaker turn.

Card numbers and security codes are redacted before anything is stored. Each turn keeps its
confidence and words (low-confidence words marked in the text); segments flagged as probably
not speech are stored with their flags and left out of summaries. A re-post of the same
`call_id` with a different transcript becomes a new version of the same episode (the earlier
version's rows stay, for audit); an identical re-post changes nothing. A re-post that resolves
to another customer than the stored call's is refused (`CallOnAnotherCustomer`): moving a call
between customers is an operator's merge or split, never a side effect of a re-post.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from channels.redaction import redact, redact_words
from channels.transcripts import Transcript, TranscriptSegment, rendered_text, to_native
from context import TokenCounter
from gateway.customers.resolve import ResolvedIdentity
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import NewMessage
from gateway.storage.repositories import episodes, messages, summaries
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef


class CallOnAnotherCustomer(Exception):
    """The call is stored on another customer than the one this post resolves to."""


@dataclass(frozen=True, slots=True)
class StoredCall:
    episode_id: str
    messages: int
    version: int
    unchanged: bool


def transcript_digest(transcript: Transcript) -> str:
    canonical = json.dumps(to_native(transcript), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _redacted(segment: TranscriptSegment) -> tuple[str, list[dict[str, Any]], int]:
    """The turn's text (uncertain words marked) and words, with card numbers removed."""
    if segment.words:
        cleaned = redact_words(segment.words)
        words = list(cleaned.words)
        text = rendered_text(
            TranscriptSegment(
                speaker=segment.speaker,
                text=segment.text,
                start=segment.start,
                end=segment.end,
                confidence=segment.confidence,
                words=tuple(words),
                flags=segment.flags,
            )
        )
        count = cleaned.redacted_count
    else:
        words = []
        text = rendered_text(segment)
        count = 0
    final = redact(text)  # also catches what word-level redaction could not see
    word_json = [
        {"text": w.text, "confidence": w.confidence, "start": w.start, "end": w.end} for w in words
    ]
    return final.text, word_json, count + final.redacted_count


async def store_call(
    session: AsyncSession,
    *,
    identity: ResolvedIdentity,
    call_id: str,
    started_at: datetime,
    transcript: Transcript,
    counter: TokenCounter,
    tenant: TenantRef = DEFAULT_TENANT,
) -> StoredCall:
    digest = transcript_digest(transcript)
    ref = f"call:{call_id}"
    known = await episodes.episode_by_external_ref(session, ref)
    if known is not None and known.customer_id != identity.customer_id:
        raise CallOnAnotherCustomer(
            f"call {call_id} is stored on customer {known.customer_id}, this post resolves to "
            f"customer {identity.customer_id}; an operator merges or splits customers"
        )
    if known is not None:
        latest = await messages.latest_in_episode(session, known.id)
        if latest is not None and latest.meta.transcript_sha256 == digest:
            count = await _count(session, known.id, known.version)
            return StoredCall(known.id, count, known.version, True)
        version = known.version + 1
        await episodes.set_transcript_version(
            session, known.id, version, transcript_confidence=transcript.customer_confidence
        )
        # The summary described the old version; compaction writes a new one.
        await summaries.drop_episode_summary(session, known.id)
        episode_id = known.id
    else:
        episode = await episodes.open_episode(
            session,
            customer_id=identity.customer_id,
            channel="phone",
            identity_id=identity.identity_id,
            external_ref=ref,
            started_at=started_at,
            transcript_confidence=transcript.customer_confidence,
            tenant=tenant,
        )
        episode_id, version = episode.id, 1
    stored = 0
    last_at = started_at
    for index, segment in enumerate(transcript.segments):
        text, words, redactions = _redacted(segment)
        if not text.strip():
            continue
        at = started_at + timedelta(seconds=max(0.0, segment.start or 0.0))
        last_at = max(last_at, at)
        await messages.append_message(
            session,
            NewMessage(
                customer_id=identity.customer_id,
                episode_id=episode_id,
                channel="phone",
                role="user" if segment.speaker == "customer" else "assistant",
                text=text,
                token_count=counter.count(text),
                identity_id=identity.identity_id,
                provider_message_id=f"{call_id}:v{version}:{index}",
                transcript_confidence=segment.confidence,
                words={"words": words} if words else None,
                meta=MessageMeta(
                    call_id=call_id,
                    transcript_version=version,
                    speaker=segment.speaker,
                    flags=tuple(segment.flags),
                    start=segment.start,
                    end=segment.end,
                    redactions=redactions,
                    transcript_sha256=digest,
                    link_level=identity.level.value,
                ),
                created_at=at,
                thread_key=f"phone:{call_id}",
                tenant=tenant,
            ),
        )
        stored += 1
    await episodes.touch_episode(session, episode_id, last_at)
    await episodes.close_episode(session, episode_id, last_at)
    return StoredCall(episode_id, stored, version, False)


async def _count(session: AsyncSession, episode_id: str, version: int) -> int:
    metas = await messages.metas_of_episode(session, episode_id)
    return sum(1 for meta in metas if meta.transcript_version == version)
