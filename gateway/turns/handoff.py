"""Ownership changes of a conversation on storage, and the JSON shape operators and events
see of a conversation and of its messages.

`change_owner` runs in the caller's transaction: the conversation's row locked, the event
applied by the pure state machine (`identity.conversation_owner`), the new owner stored, the
change audited (actor and reason) and announced in the event outbox — all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.events.outbox import (
    CONVERSATION_OWNER_CHANGED,
    CONVERSATION_WAITING,
    MESSAGE_CREATED,
    EventOutbox,
)
from gateway.storage.records import ConversationRecord, MessageRecord
from gateway.storage.repositories import audit, conversations
from identity.conversation_owner import Event, Owner, Ownership, Refused, apply

AUDIT_SUBJECT = "conversation"


class ConversationNotFound(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class OwnerChange:
    conversation: ConversationRecord
    previous_owner: str
    changed: bool


def ownership_of(conversation: ConversationRecord) -> Ownership:
    owner = Owner(conversation.owner)
    return Ownership(owner, conversation.held_by if owner is Owner.HUMAN else None)


def conversation_json(conversation: ConversationRecord) -> dict[str, Any]:
    return {
        "id": conversation.id,
        "customer_id": conversation.customer_id,
        "channel": conversation.channel,
        "external_id": conversation.external_id,
        "owner": conversation.owner,
        "held_by": conversation.held_by,
        "since": conversation.owner_since.isoformat(),
        "last_message_at": conversation.last_message_at.isoformat(),
    }


def author_of(message: MessageRecord) -> str:
    return message.meta.author or ("customer" if message.role == "user" else "bot")


def message_json(message: MessageRecord) -> dict[str, Any]:
    return {
        "id": message.id,
        "role": message.role,
        "author": author_of(message),
        "text": message.text,
        "created_at": message.created_at.isoformat(),
    }


async def change_owner(
    session: AsyncSession,
    events: EventOutbox | None,
    conversation_id: str,
    event: Event,
    *,
    actor: str,
    reason: str,
) -> OwnerChange | Refused:
    """Apply `event` to the conversation (see the module docstring); a refusal changes
    nothing. Raises `ConversationNotFound`."""
    current = await conversations.lock(session, conversation_id)
    if current is None:
        raise ConversationNotFound(conversation_id)
    before = ownership_of(current)
    after = apply(before, event)
    if isinstance(after, Refused):
        return after
    if after == before:
        return OwnerChange(current, current.owner, changed=False)
    updated = await conversations.set_owner(
        session, conversation_id, owner=after.owner.value, held_by=after.held_by
    )
    await audit.record_audit(
        session,
        actor=actor,
        action=f"conversation.{after.owner.value}",
        reason=reason,
        subject_type=AUDIT_SUBJECT,
        subject_id=conversation_id,
        details={"previous_owner": current.owner, "previous_held_by": current.held_by},
    )
    if events is not None:
        data = {
            "conversation": conversation_json(updated),
            "previous_owner": current.owner,
            "actor": actor,
            "reason": reason,
        }
        kind = CONVERSATION_WAITING if after.owner is Owner.WAITING else CONVERSATION_OWNER_CHANGED
        await events.record(session, kind, data)
    return OwnerChange(updated, current.owner, changed=True)


async def message_created(
    session: AsyncSession,
    events: EventOutbox | None,
    conversation: ConversationRecord,
    message: MessageRecord,
) -> None:
    """Announce a stored message of the conversation (in the transaction that stores it)."""
    if events is not None and events.enabled:
        await events.record(
            session,
            MESSAGE_CREATED,
            {"conversation": conversation_json(conversation), "message": message_json(message)},
        )
