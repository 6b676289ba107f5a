"""The rows a stored inbound message becomes: the message itself (redacted, counted once),
its note on the conversation, and which earlier version an edit replaces."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import InboundMessage
from channels.redaction import redact
from context import TokenCounter
from gateway.customers.resolve import ResolvedIdentity
from gateway.runtime.trace_context import TraceCarrier
from gateway.storage.message_meta import decode_meta
from gateway.storage.records import MessageRecord, NewMessage, SenderSnapshot
from gateway.storage.repositories import messages
from gateway.storage.repositories.conversations import MessageSeen
from gateway.tenant_ref import TenantRef

# Rows read per statement while looking for an edit's previous version.
_THREAD_PAGE = 200


def new_message(
    inbound: InboundMessage,
    identity: ResolvedIdentity,
    *,
    episode_id: str,
    thread: str,
    supersedes_id: int | None,
    counter: TokenCounter,
    tenant: TenantRef,
    verification: str | None = None,
    trace: TraceCarrier | None = None,
) -> NewMessage:
    # Card numbers and security codes never reach storage, windows or logs.
    cleaned = redact(inbound.text)
    return NewMessage(
        customer_id=identity.customer_id,
        episode_id=episode_id,
        channel=inbound.channel,
        role="user",
        text=cleaned.text,
        token_count=counter.count(cleaned.text),  # the one count, at ingest
        identity_id=identity.identity_id,
        provider_message_id=inbound.provider_message_id,
        transcript_confidence=inbound.transcript_confidence,
        media=inbound.media,
        meta=replace(
            decode_meta(inbound.extra),
            kind=inbound.kind,
            reply_to_provider_id=inbound.reply_to_provider_id or None,
            client_message_id=inbound.client_message_id,
            redactions=cleaned.redacted_count or None,
            verification=verification,
            trace=trace,
        ),
        created_at=inbound.received_at,
        thread_key=thread,
        supersedes_id=supersedes_id,
        sender=SenderSnapshot(
            sender=inbound.sender,
            link_level=identity.level.value,
            allowed_scopes=tuple(sorted(identity.allowed_scopes)),
            own_facts_only=identity.own_facts_only,
        ),
        tenant=tenant,
    )


def message_seen(key: str, message: MessageRecord, identity: ResolvedIdentity) -> MessageSeen:
    return MessageSeen(
        conversation_key=key,
        customer_id=message.customer_id,
        channel=message.channel,
        identity_id=identity.identity_id,
        external_id=identity.key.identifier.value,
        at=message.created_at,
        inbound=True,
        tenant=message.tenant,
    )


async def latest_version(session: AsyncSession, thread: str, message_key: str) -> int | None:
    """The newest stored version (original or earlier edit) of the channel message an edit
    replaces: the thread's user rows whose `meta.message_key` is `message_key`."""
    found: int | None = None
    after: int | None = None
    while True:
        page = await messages.thread_messages(session, thread, after_id=after, limit=_THREAD_PAGE)
        for record in page:
            if record.role == "user" and record.meta.message_key == message_key:
                found = record.id
        if len(page) < _THREAD_PAGE:
            return found
        after = page[-1].id
