"""A new version of a customer's message, read from its attachment before its turn is answered
(a voice note's transcript, a shared contact's card): the same message in every respect but its
text, superseding the placeholder it replaces."""

from __future__ import annotations

from typing import Any

from context import TokenCounter
from gateway.storage.message_meta import MessageMeta
from gateway.storage.records import MessageRecord, NewMessage


def read_version(
    placeholder: MessageRecord,
    text: str,
    *,
    counter: TokenCounter,
    version_id: str,
    meta: MessageMeta,
    transcript_confidence: float | None = None,
    words: dict[str, Any] | None = None,
) -> NewMessage:
    """`placeholder` with `text` (already redacted); `version_id` is the new row's provider
    message id (unique per placeholder, so a second reading is refused, not stored twice)."""
    return NewMessage(
        customer_id=placeholder.customer_id,
        episode_id=placeholder.episode_id,
        channel=placeholder.channel,
        role="user",
        text=text,
        token_count=counter.count(text),
        identity_id=placeholder.identity_id,
        provider_message_id=version_id,
        transcript_confidence=transcript_confidence,
        words=words,
        media=placeholder.media,
        meta=meta,
        supersedes_id=placeholder.id,
        created_at=placeholder.created_at,
        thread_key=placeholder.thread_key,
        tenant=placeholder.tenant,
        sender=placeholder.sender,
    )
