"""Raw messages: appended, never updated; the window reads only what it needs."""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.clock import utcnow
from gateway.storage.errors import DuplicateMessage, RecordNotFound, require_customer
from gateway.storage.models import Episode, Message
from gateway.storage.records import MessageRecord, NewMessage


def message_record(row: Message) -> MessageRecord:
    return MessageRecord(
        id=row.id,
        customer_id=row.customer_id,
        episode_id=row.episode_id,
        identity_id=row.identity_id,
        channel=row.channel,
        role=row.role,
        text=row.text,
        provider_message_id=row.provider_message_id,
        token_count=row.token_count,
        transcript_confidence=row.transcript_confidence,
        redacted=row.redacted,
        supersedes_id=row.supersedes_id,
        created_at=row.created_at,
        words=row.words,
        media=row.media,
        extra=row.extra,
        thread_key=row.thread_key,
    )


async def append_message(session: AsyncSession, new: NewMessage) -> MessageRecord:
    """Insert one raw message. A repeated (channel, provider id) raises `DuplicateMessage`;
    the insert runs in a savepoint so the caller's transaction stays usable."""
    if new.token_count < 0:
        raise ValueError("token_count must be computed before storing")
    row = Message(
        customer_id=require_customer(new.customer_id),
        episode_id=new.episode_id,
        identity_id=new.identity_id,
        channel=new.channel,
        role=new.role,
        text=new.text,
        provider_message_id=new.provider_message_id,
        token_count=new.token_count,
        transcript_confidence=new.transcript_confidence,
        words=new.words,
        media=new.media,
        extra=new.extra,
        redacted=new.redacted,
        supersedes_id=new.supersedes_id,
        created_at=new.created_at or utcnow(),
        thread_key=new.thread_key,
    )
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
            await session.execute(
                update(Episode)
                .where(Episode.id == new.episode_id)
                .values(token_total=Episode.token_total + new.token_count)
            )
    except IntegrityError as exc:
        if new.provider_message_id is not None and await _exists(
            session, new.channel, new.provider_message_id
        ):
            raise DuplicateMessage(new.channel, new.provider_message_id) from exc
        raise
    return message_record(row)


async def _exists(session: AsyncSession, channel: str, provider_message_id: str) -> bool:
    found = await session.scalar(
        select(Message.id).where(
            Message.channel == channel, Message.provider_message_id == provider_message_id
        )
    )
    return found is not None


async def find_by_provider_id(
    session: AsyncSession, channel: str, provider_message_id: str
) -> MessageRecord | None:
    row = await session.scalar(
        select(Message).where(
            Message.channel == channel, Message.provider_message_id == provider_message_id
        )
    )
    return message_record(row) if row else None


async def get_message(session: AsyncSession, customer_id: str, message_id: int) -> MessageRecord:
    row = await session.scalar(
        select(Message).where(
            Message.customer_id == require_customer(customer_id), Message.id == message_id
        )
    )
    if row is None:
        raise RecordNotFound(f"message {message_id} not found")
    return message_record(row)


async def recent_messages(
    session: AsyncSession,
    customer_id: str,
    episode_id: str,
    *,
    limit: int,
    after_id: int | None = None,
    before_id: int | None = None,
) -> list[MessageRecord]:
    """The newest `limit` messages of an episode (after `after_id`), oldest first.

    Uses the (episode_id, id) index, so the cost follows `limit`, not the history size.
    """
    query = select(Message).where(
        Message.customer_id == require_customer(customer_id), Message.episode_id == episode_id
    )
    if after_id is not None:
        query = query.where(Message.id > after_id)
    if before_id is not None:
        query = query.where(Message.id < before_id)
    rows = list(await session.scalars(query.order_by(Message.id.desc()).limit(limit)))
    rows.reverse()
    return [message_record(row) for row in rows]


async def episode_messages(
    session: AsyncSession, customer_id: str, episode_id: str
) -> list[MessageRecord]:
    rows = await session.scalars(
        select(Message)
        .where(
            Message.customer_id == require_customer(customer_id),
            Message.episode_id == episode_id,
        )
        .order_by(Message.id)
    )
    return [message_record(row) for row in rows]


async def history_token_total(session: AsyncSession, customer_id: str) -> int:
    """What the full raw history would cost, from the per-episode sums kept at ingest."""
    total = await session.scalar(
        select(func.coalesce(func.sum(Episode.token_total), 0)).where(
            Episode.customer_id == require_customer(customer_id)
        )
    )
    return int(total or 0)


async def unsummarized_tokens(
    session: AsyncSession, customer_id: str, episode_id: str, after_id: int | None
) -> int:
    query = select(func.coalesce(func.sum(Message.token_count), 0)).where(
        Message.customer_id == require_customer(customer_id), Message.episode_id == episode_id
    )
    if after_id is not None:
        query = query.where(Message.id > after_id)
    return int(await session.scalar(query) or 0)


async def thread_messages(
    session: AsyncSession, thread_key: str, *, after_id: int | None = None, limit: int = 200
) -> list[MessageRecord]:
    """A chat thread's messages after a cursor, oldest first (web chat catch-up)."""
    query = select(Message).where(Message.thread_key == thread_key)
    if after_id is not None:
        query = query.where(Message.id > after_id)
    rows = await session.scalars(query.order_by(Message.id).limit(limit))
    return [message_record(row) for row in rows]
