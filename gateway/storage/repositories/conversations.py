"""Conversations (one customer on one channel identity) and who answers them.

Accepting a message notes it on its conversation with one upsert (a lot of messages: one
statement for the lot), which creates the row on the conversation's first message and
returns it, owner included. Owner changes lock the row, so two operators never both hold it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, case, delete, func, outerjoin, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import Media
from gateway.runtime.clock import utcnow
from gateway.storage.attachments import media_of
from gateway.storage.message_meta import decode_meta
from gateway.storage.models import Conversation, new_id
from gateway.storage.records import ConversationRecord, MessageRecord
from gateway.storage.repositories.bound_lists import in_bounded_shapes, values_in
from gateway.storage.repositories.messages import message_record
from gateway.storage.repositories.tables import (
    CONVERSATIONS,
    EPISODES,
    MESSAGES,
    TURNS,
    AnyRow,
)
from gateway.tenant_ref import DEFAULT_TENANT, TenantRef

OWNERS = ("bot", "waiting", "human")


@dataclass(frozen=True, slots=True)
class MessageSeen:
    """A stored message of a conversation, as accepting notes it."""

    conversation_key: str
    customer_id: str
    channel: str
    identity_id: str | None
    external_id: str
    at: datetime
    # A customer's message (it opens WhatsApp's window), not ours or an operator's.
    inbound: bool = False
    tenant: TenantRef = DEFAULT_TENANT  # the tenant the message entered through


@dataclass(frozen=True, slots=True)
class ConversationMessage:
    """A message of a conversation's customer as an operator reads it: its channel, how sure a
    transcript was, and a reply's delivery."""

    id: int
    role: str
    author: str
    actor: str | None
    text: str
    channel: str
    created_at: datetime
    delivery_status: str | None
    delivery_error: str | None
    transcript_confidence: float | None = None
    media: tuple[Media, ...] = ()  # attachments, by reference


def conversation_record(row: Conversation | AnyRow) -> ConversationRecord:
    return ConversationRecord(
        id=row.id,
        conversation_key=row.conversation_key,
        customer_id=row.customer_id,
        channel=row.channel,
        identity_id=row.identity_id,
        external_id=row.external_id,
        owner=row.owner,
        held_by=row.held_by,
        owner_since=row.owner_since,
        last_message_at=row.last_message_at,
        created_at=row.created_at,
        last_inbound_at=row.last_inbound_at,
        window_closed_at=row.window_closed_at,
        tenant=TenantRef.decode(row.tenant),
    )


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


async def note_messages(
    session: AsyncSession, seen: Iterable[MessageSeen]
) -> dict[str, ConversationRecord]:
    """Create or touch each message's conversation (its `last_message_at`, and for a
    customer's message `last_inbound_at`, only move forward) in a few statements
    (`in_bounded_shapes`); the conversations by key."""
    latest: dict[str, MessageSeen] = {}
    inbound: dict[str, MessageSeen] = {}
    for message in seen:
        key = message.conversation_key
        known = latest.get(key)
        if known is None or message.at > known.at:
            latest[key] = message
        if message.inbound and (key not in inbound or message.at > inbound[key].at):
            inbound[key] = message
    if not latest:
        return {}
    now = utcnow()
    rows = [
        {
            "id": new_id(),
            "conversation_key": m.conversation_key,
            "customer_id": m.customer_id,
            "channel": m.channel,
            "identity_id": m.identity_id,
            "external_id": m.external_id,
            "owner": "bot",
            "owner_since": now,
            "last_message_at": m.at,
            "last_inbound_at": _at(inbound.get(m.conversation_key)),
            # The tenant of the customer's latest message: where the conversation is held now.
            "tenant": (inbound.get(m.conversation_key) or m).tenant.encode(),
            "created_at": now,
        }
        # Sorted, so two lots touching the same conversations lock them in the same order.
        for m in sorted(latest.values(), key=lambda m: m.conversation_key)
    ]
    insert = pg_insert if _dialect(session) == "postgresql" else sqlite_insert
    noted: dict[str, ConversationRecord] = {}
    for chunk in in_bounded_shapes(rows):
        result = await session.execute(_touch_conversations(insert, chunk))
        noted.update((row.conversation_key, conversation_record(row)) for row in result)
    return noted


def _touch_conversations(insert: Callable[[Table], Any], rows: Sequence[dict[str, Any]]) -> Any:
    """The upsert of `rows`: a new conversation is created, a known one touched."""
    statement = insert(CONVERSATIONS).values(list(rows))
    return statement.on_conflict_do_update(
        index_elements=["conversation_key"],
        set_={
            "last_message_at": case(
                (
                    statement.excluded.last_message_at > CONVERSATIONS.c.last_message_at,
                    statement.excluded.last_message_at,
                ),
                else_=CONVERSATIONS.c.last_message_at,
            ),
            "last_inbound_at": _later(
                statement.excluded.last_inbound_at, CONVERSATIONS.c.last_inbound_at
            ),
            # Only a customer's message moves the conversation to another tenant.
            "tenant": case(
                (statement.excluded.last_inbound_at.is_(None), CONVERSATIONS.c.tenant),
                else_=statement.excluded.tenant,
            ),
        },
    ).returning(*CONVERSATIONS.c)


def _at(message: MessageSeen | None) -> datetime | None:
    return message.at if message is not None else None


def _later(new: Any, current: Any) -> Any:
    """The later of two nullable times (a NULL `new` keeps `current`)."""
    return case(
        (new.is_(None), current),
        (current.is_(None), new),
        (new > current, new),
        else_=current,
    )


async def get(session: AsyncSession, conversation_id: str) -> ConversationRecord | None:
    row = await session.get(Conversation, conversation_id)
    return conversation_record(row) if row is not None else None


async def by_key(session: AsyncSession, conversation_key: str) -> ConversationRecord | None:
    row = await session.scalar(
        select(Conversation).where(Conversation.conversation_key == conversation_key)
    )
    return conversation_record(row) if row is not None else None


async def lock(session: AsyncSession, conversation_id: str) -> ConversationRecord | None:
    """The conversation, its row locked until the transaction ends (PostgreSQL; SQLite has
    one writer at a time)."""
    row = (
        await session.execute(
            select(CONVERSATIONS).where(CONVERSATIONS.c.id == conversation_id).with_for_update()
        )
    ).first()
    return conversation_record(row) if row is not None else None


async def set_owner(
    session: AsyncSession, conversation_id: str, *, owner: str, held_by: str | None
) -> ConversationRecord:
    if owner not in OWNERS:
        raise ValueError(f"unknown owner {owner!r}")
    row = (
        await session.execute(
            CONVERSATIONS.update()
            .where(CONVERSATIONS.c.id == conversation_id)
            .values(owner=owner, held_by=held_by, owner_since=utcnow())
            .returning(*CONVERSATIONS.c)
        )
    ).first()
    if row is None:
        raise LookupError(f"conversation {conversation_id} not found")
    return conversation_record(row)


async def list_conversations(
    session: AsyncSession, *, owner: str | None = None, limit: int = 200
) -> list[ConversationRecord]:
    """Waiting ones first (oldest first), then those operators hold, then the bot's (most
    recent message first); or only those of `owner`."""
    owner_column = CONVERSATIONS.c.owner
    rank = case((owner_column == "waiting", 0), (owner_column == "human", 1), else_=2)
    query = select(CONVERSATIONS)
    if owner is not None:
        query = query.where(CONVERSATIONS.c.owner == owner)
    # Waiting: the one asked for longest ago first; the others: the latest message first.
    oldest_first = case((CONVERSATIONS.c.owner == "waiting", CONVERSATIONS.c.owner_since))
    query = query.order_by(
        rank, oldest_first, CONVERSATIONS.c.last_message_at.desc(), CONVERSATIONS.c.id
    ).limit(limit)
    return [conversation_record(row) for row in await session.execute(query)]


async def count_waiting_since(session: AsyncSession, before: datetime) -> int:
    """Conversations waiting for an operator since before `before`."""
    value = await session.scalar(
        select(func.count())
        .select_from(CONVERSATIONS)
        .where(CONVERSATIONS.c.owner == "waiting", CONVERSATIONS.c.owner_since < before)
    )
    return int(value or 0)


async def recent_messages(
    session: AsyncSession, conversation: ConversationRecord, *, limit: int = 50
) -> list[ConversationMessage]:
    """The newest messages of the conversation's customer on every channel (oldest first), so
    an operator reads the conversation beside what the customer said elsewhere (a call, another
    chat); a reply's delivery with it. A call's earlier transcripts and an edited message's
    earlier versions are left out."""
    newer = MESSAGES.alias("newer")
    joined = outerjoin(
        MESSAGES,
        TURNS,
        and_(TURNS.c.reply_message_id == MESSAGES.c.id, MESSAGES.c.role == "assistant"),
    )
    rows = list(
        await session.execute(
            select(
                MESSAGES.c.id,
                MESSAGES.c.role,
                MESSAGES.c.extra,
                MESSAGES.c.text,
                MESSAGES.c.channel,
                MESSAGES.c.created_at,
                MESSAGES.c.transcript_confidence,
                MESSAGES.c.media,
                MESSAGES.c.episode_id,
                TURNS.c.delivery_status,
                TURNS.c.error,
            )
            .select_from(joined)
            .where(
                MESSAGES.c.customer_id == conversation.customer_id,
                ~select(newer.c.id).where(newer.c.supersedes_id == MESSAGES.c.id).exists(),
            )
            .order_by(MESSAGES.c.id.desc())
            .limit(limit)
        )
    )
    rows.reverse()
    metas = [decode_meta(row.extra) for row in rows]
    current = await _transcript_versions(
        session,
        {
            row.episode_id
            for row, meta in zip(rows, metas, strict=True)
            if meta.transcript_version is not None
        },
    )
    out: list[ConversationMessage] = []
    for row, meta in zip(rows, metas, strict=True):
        version = current.get(row.episode_id)
        if meta.transcript_version is not None and meta.transcript_version != version:
            continue  # a call's earlier transcript, kept for audit
        author = meta.author or ("customer" if row.role == "user" else "bot")
        out.append(
            ConversationMessage(
                id=row.id,
                role=row.role,
                author=author,
                actor=meta.actor,
                text=row.text,
                channel=row.channel,
                created_at=row.created_at,
                delivery_status=row.delivery_status,
                delivery_error=(
                    row.error if row.delivery_status in ("retry", "failed", "held") else None
                ),
                transcript_confidence=row.transcript_confidence,
                media=media_of(row.media),
            )
        )
    return out


async def _transcript_versions(session: AsyncSession, episode_ids: set[str]) -> dict[str, int]:
    """The current transcript version of each of these (call) episodes."""
    if not episode_ids:
        return {}
    found = await session.execute(
        select(EPISODES.c.id, EPISODES.c.version).where(
            values_in(session, EPISODES.c.id, sorted(episode_ids))
        )
    )
    return {row.id: int(row.version) for row in found}


async def move_conversations(
    session: AsyncSession, conversation_ids: Sequence[str], to_customer: str
) -> None:
    """Give the conversations to `to_customer` (a merge or split), each re-keyed to its new
    customer. Where that customer already has the channel's conversation, the two become one:
    the one a human was asked for or holds keeps its owner."""
    for conversation_id in conversation_ids:
        moved = await lock(session, conversation_id)
        if moved is None or moved.customer_id == to_customer:
            continue
        key = f"{to_customer}:{moved.channel}"
        there = await by_key(session, key)
        if there is None:
            await session.execute(
                update(Conversation)
                .where(Conversation.id == conversation_id)
                .values(customer_id=to_customer, conversation_key=key)
            )
            continue
        latest = max(there.last_message_at, moved.last_message_at)
        values: dict[str, Any] = {"last_message_at": latest}
        inbound = [at for at in (there.last_inbound_at, moved.last_inbound_at) if at is not None]
        if inbound:
            values["last_inbound_at"] = max(inbound)
        if there.owner == "bot" and moved.owner != "bot":
            values.update(owner=moved.owner, held_by=moved.held_by, owner_since=moved.owner_since)
        await session.execute(delete(Conversation).where(Conversation.id == conversation_id))
        await session.execute(
            update(Conversation).where(Conversation.id == there.id).values(**values)
        )


async def latest_customer_message(
    session: AsyncSession, conversation: ConversationRecord
) -> MessageRecord | None:
    """The conversation's newest customer message (whose sender a reply goes to)."""
    row = (
        await session.execute(
            select(MESSAGES)
            .where(
                MESSAGES.c.customer_id == conversation.customer_id,
                MESSAGES.c.channel == conversation.channel,
                MESSAGES.c.role == "user",
            )
            .order_by(MESSAGES.c.id.desc())
            .limit(1)
        )
    ).first()
    return message_record(row) if row is not None else None
