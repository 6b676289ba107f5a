"""WhatsApp's customer-service window on storage: the provider closing a conversation's window,
a reply sent free-form that must go again as a template, and the replies held for operators.

The window itself is pure (`identity.service_window`); here only the rows it reads and writes:
`conversations.last_inbound_at` (kept by `conversations.note_messages`),
`conversations.window_closed_at`, and a turn's delivery status ("held": not sent, the reason in
`error`; "template": sent as the tenant's template instead of free text).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.models import OutboundMessage
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories.bound_lists import values_in
from gateway.storage.repositories.tables import CONVERSATIONS, TURNS, table_of

HELD = "held"
SENT_AS_TEMPLATE = "template"
OUTBOUND = table_of(OutboundMessage)


async def close_window(session: AsyncSession, conversation_key: str, at: datetime) -> None:
    """The provider said the window is closed for what we sent at `at` (kept only forward)."""
    await session.execute(
        update(CONVERSATIONS)
        .where(
            CONVERSATIONS.c.conversation_key == conversation_key,
            or_(CONVERSATIONS.c.window_closed_at.is_(None), CONVERSATIONS.c.window_closed_at < at),
        )
        .values(window_closed_at=at)
    )


async def refused_send(
    session: AsyncSession, channel: str, provider_id: str
) -> tuple[int, str, datetime] | None:
    """(turn id, conversation key, when it was sent) of an outbound message we recorded."""
    row = (
        await session.execute(
            select(OUTBOUND.c.turn_id, TURNS.c.conversation_key, OUTBOUND.c.created_at)
            .select_from(OUTBOUND.join(TURNS, TURNS.c.id == OUTBOUND.c.turn_id))
            .where(OUTBOUND.c.channel == channel, OUTBOUND.c.provider_message_id == provider_id)
        )
    ).first()
    return (int(row.turn_id), str(row.conversation_key), row.created_at) if row else None


async def send_again_as_template(session: AsyncSession, turn_id: int, reason: str) -> bool:
    """Queue a reply sent as free text for another delivery (which, the window being closed,
    goes as the template or is held). Only a reply whose delivery is "sent" — free text — is
    queued, once: one sent as the template, queued already or held is left alone, so a
    provider that refuses again never makes us loop. True when it was queued."""
    result = await session.execute(
        update(TURNS)
        .where(TURNS.c.id == turn_id, TURNS.c.delivery_status == "sent")
        .values(
            delivery_status="retry",
            delivery_lease_until=None,
            error=reason[:2000],
            updated_at=utcnow(),
        )
    )
    return bool(getattr(result, "rowcount", 0))


async def held_since_last_inbound(
    session: AsyncSession, conversations: Sequence[ConversationRecord]
) -> dict[str, int]:
    """How many replies of each conversation are held since the customer last wrote (by
    conversation id; a message of the customer's reopens the window, and its own reply
    follows)."""
    windowed = [c for c in conversations if c.last_inbound_at is not None]
    if not windowed:
        return {}
    by_key = {c.conversation_key: c for c in windowed}
    rows = await session.execute(
        select(TURNS.c.conversation_key, TURNS.c.updated_at).where(
            values_in(session, TURNS.c.conversation_key, sorted(by_key)),
            TURNS.c.delivery_status == HELD,
        )
    )
    counts: dict[str, int] = {}
    for key, updated_at in rows:
        conversation = by_key[key]
        last = conversation.last_inbound_at
        if last is not None and updated_at >= last:
            counts[conversation.id] = counts.get(conversation.id, 0) + 1
    return counts
