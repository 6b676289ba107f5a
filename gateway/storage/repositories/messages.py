"""Raw messages: appended, never updated; the window reads only what it needs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, bindparam, case, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.runtime.clock import utcnow
from gateway.storage.attachments import media_of, stored_media
from gateway.storage.errors import DuplicateMessage, RecordNotFound, require_customer
from gateway.storage.message_meta import (
    ACTOR_KEY,
    AUTHOR_KEY,
    CANNED_KEY,
    OPERATOR_AUTHOR,
    SPEAKER_KEY,
    MessageMeta,
    decode_meta,
    encode_meta,
    meta_text,
)
from gateway.storage.models import ChannelIdentity, Episode, Message
from gateway.storage.records import (
    MessageRecord,
    NewMessage,
    SenderSnapshot,
    TurnLine,
    WindowLine,
)
from gateway.storage.repositories.bound_lists import (
    ByDialect,
    as_arrays,
    in_bounded_shapes,
    rows_in,
    rows_params,
    values_in,
)
from gateway.storage.repositories.tables import EPISODES, MESSAGES, AnyRow
from gateway.tenant_ref import TenantRef

# A repeated (channel, provider id) inserts nothing and returns no id.
_INSERT = {
    name: insert(MESSAGES)
    .on_conflict_do_nothing(index_elements=["channel", "provider_message_id"])
    .returning(MESSAGES.c.id)
    for name, insert in (("postgresql", pg_insert), ("sqlite", sqlite_insert))
}
# Plain rows of the table, not ORM objects: the answer path reads a message per reply.
# Several rows in one statement, the ids returned (and assigned) in the rows' order.
_INSERT_MANY = MESSAGES.insert().returning(MESSAGES.c.id, sort_by_parameter_order=True)
_BY_PROVIDER_IDS = ByDialect.build(
    lambda arrays: select(MESSAGES).where(
        rows_in((MESSAGES.c.channel, MESSAGES.c.provider_message_id), "keys", arrays=arrays)
    )
)
_GET = select(MESSAGES).where(
    MESSAGES.c.customer_id == bindparam("customer_id"), MESSAGES.c.id == bindparam("message_id")
)
_BY_PROVIDER_ID = select(MESSAGES).where(
    MESSAGES.c.channel == bindparam("channel"),
    MESSAGES.c.provider_message_id == bindparam("provider_id"),
)
_EPISODE = select(MESSAGES).where(
    MESSAGES.c.customer_id == bindparam("customer_id"),
    MESSAGES.c.episode_id == bindparam("episode_id"),
)
# recent_messages by (after_id given, before_id given); plain rows (every compaction reads them)
_RECENT = {
    (after, before): _EPISODE.where(
        *([MESSAGES.c.id > bindparam("after_id")] if after else []),
        *([MESSAGES.c.id < bindparam("before_id")] if before else []),
    )
    .order_by(MESSAGES.c.id.desc())
    .limit(bindparam("limit"))
    for after in (False, True)
    for before in (False, True)
}
# In `WindowLine`'s field order.
_LINE_COLUMNS = (
    MESSAGES.c.id,
    MESSAGES.c.role,
    MESSAGES.c.text,
    MESSAGES.c.token_count,
    MESSAGES.c.channel,
    MESSAGES.c.created_at,
    MESSAGES.c.transcript_confidence,
    MESSAGES.c.supersedes_id,
    meta_text(MESSAGES.c.extra, CANNED_KEY).is_not(None).label("canned"),
    case(
        (
            meta_text(MESSAGES.c.extra, AUTHOR_KEY) == OPERATOR_AUTHOR,
            meta_text(MESSAGES.c.extra, ACTOR_KEY),
        )
    ).label("human_agent"),
)
# window_lines by (after_id given, before_id given)
_LINES = {
    (after, before): select(*_LINE_COLUMNS)
    .where(
        MESSAGES.c.customer_id == bindparam("customer_id"),
        MESSAGES.c.episode_id == bindparam("episode_id"),
        *([MESSAGES.c.id > bindparam("after_id")] if after else []),
        *([MESSAGES.c.id < bindparam("before_id")] if before else []),
    )
    .order_by(MESSAGES.c.id.desc())
    .limit(bindparam("limit"))
    for after in (False, True)
    for before in (False, True)
}
_HISTORY_TOKENS = select(func.coalesce(func.sum(Episode.token_total), 0)).where(
    Episode.customer_id == bindparam("customer_id")
)
# Canned replies (the offline model's, the fallback) are never compacted: not counted either.
_UNSUMMARIZED = select(func.coalesce(func.sum(Message.token_count), 0)).where(
    Message.customer_id == bindparam("customer_id"),
    Message.episode_id == bindparam("episode_id"),
    meta_text(Message.extra, CANNED_KEY).is_(None),
)
_UNSUMMARIZED_AFTER = _UNSUMMARIZED.where(Message.id > bindparam("after_id"))
_ADD_TOKENS = (
    EPISODES.update()
    .where(EPISODES.c.id == bindparam("episode_id"))
    .values(token_total=EPISODES.c.token_total + bindparam("tokens"))
)


def message_record(row: Message | AnyRow) -> MessageRecord:
    """From an ORM row, or a Core row of the messages table (the same attribute names)."""
    return message_from(functools.partial(getattr, row))


def message_from(column: Callable[[str], Any]) -> MessageRecord:
    """From the value of each column of the messages table, by name (a row joined with other
    tables labels them)."""
    extra = column("extra")
    return MessageRecord(
        id=column("id"),
        customer_id=column("customer_id"),
        episode_id=column("episode_id"),
        identity_id=column("identity_id"),
        channel=column("channel"),
        role=column("role"),
        text=column("text"),
        provider_message_id=column("provider_message_id"),
        token_count=column("token_count"),
        transcript_confidence=column("transcript_confidence"),
        redacted=column("redacted"),
        supersedes_id=column("supersedes_id"),
        created_at=column("created_at"),
        words=column("words"),
        media=media_of(column("media")),
        meta=decode_meta(extra),
        thread_key=column("thread_key"),
        sender=_sender_of(extra),
        tenant=TenantRef.decode(column("tenant")),
    )


# The sender snapshot is kept in the message's `extra` column beside its `MessageMeta`.
def _sender_keys(sender: SenderSnapshot | None) -> dict[str, Any] | None:
    if sender is None:
        return None
    return {
        "sender": sender.sender,
        "link_level": sender.link_level,
        "allowed_scopes": list(sender.allowed_scopes),
        "own_facts_only": sender.own_facts_only,
    }


def _sender_of(stored: dict[str, Any] | None) -> SenderSnapshot | None:
    if not stored or "sender" not in stored:
        return None
    return SenderSnapshot(
        sender=str(stored["sender"]),
        link_level=str(stored.get("link_level", "anonymous")),
        allowed_scopes=tuple(stored.get("allowed_scopes", ["public"])),
        own_facts_only=bool(stored.get("own_facts_only", True)),
    )


def _row_values(new: NewMessage) -> dict[str, Any]:
    """The row `new` is stored as (created now unless it says when)."""
    if new.token_count < 0:
        raise ValueError("token_count must be computed before storing")
    return {
        "customer_id": require_customer(new.customer_id),
        "episode_id": new.episode_id,
        "identity_id": new.identity_id,
        "channel": new.channel,
        "role": new.role,
        "text": new.text,
        "provider_message_id": new.provider_message_id,
        "token_count": new.token_count,
        "transcript_confidence": new.transcript_confidence,
        "words": new.words,
        "media": stored_media(new.media),
        "extra": encode_meta(new.meta, _sender_keys(new.sender)),
        "redacted": new.redacted,
        "supersedes_id": new.supersedes_id,
        "created_at": new.created_at or utcnow(),
        "thread_key": new.thread_key,
        "tenant": new.tenant.encode(),
    }


def _stored(message_id: int, new: NewMessage, values: dict[str, Any]) -> MessageRecord:
    return MessageRecord(
        id=int(message_id),
        customer_id=values["customer_id"],
        episode_id=new.episode_id,
        identity_id=new.identity_id,
        channel=new.channel,
        role=new.role,
        text=new.text,
        provider_message_id=new.provider_message_id,
        token_count=new.token_count,
        transcript_confidence=new.transcript_confidence,
        redacted=new.redacted,
        supersedes_id=new.supersedes_id,
        created_at=values["created_at"],
        words=new.words,
        # As a read gives them back (the codec drops what it cannot keep), so a stored record
        # equals the one read again.
        media=media_of(values["media"]),
        meta=decode_meta(values["extra"]),
        thread_key=new.thread_key,
        sender=new.sender,
        tenant=new.tenant,
    )


async def append_message(
    session: AsyncSession, new: NewMessage, *, add_to_episode: bool = True
) -> MessageRecord:
    """Insert one raw message in one statement. A repeated (channel, provider id) raises
    `DuplicateMessage` and leaves the caller's transaction usable (the insert does nothing on
    that conflict, so no savepoint is needed). `add_to_episode=False` when the caller adds the
    token count to the episode itself (`episodes.record_message`)."""
    values = _row_values(new)
    message_id = await session.scalar(_INSERT[_dialect(session)], values)
    if message_id is None:
        raise DuplicateMessage(new.channel, str(new.provider_message_id))
    if add_to_episode and new.token_count:
        await session.execute(
            _ADD_TOKENS, {"episode_id": new.episode_id, "tokens": new.token_count}
        )
    return _stored(message_id, new, values)


async def append_messages(session: AsyncSession, news: Sequence[NewMessage]) -> list[MessageRecord]:
    """Insert several raw messages in a few statements (`in_bounded_shapes`), their ids given
    in list order (so one chat's messages keep their order). A repeated (channel, provider id)
    raises the database's `IntegrityError` and spoils the transaction: the caller checks for
    stored ones first (`find_by_provider_ids`). The caller adds the token counts to the episodes
    (`episodes.record_messages`)."""
    if not news:
        return []
    rows = [_row_values(new) for new in news]
    ids: list[int] = []
    for chunk in in_bounded_shapes(rows):
        ids.extend((await session.execute(_INSERT_MANY, chunk)).scalars().all())
    return [
        _stored(message_id, new, values)
        for message_id, new, values in zip(ids, news, rows, strict=True)
    ]


def _dialect(session: AsyncSession) -> str:
    bind = session.bind
    return "postgresql" if bind is not None and bind.dialect.name == "postgresql" else "sqlite"


async def find_by_provider_id(
    session: AsyncSession, channel: str, provider_message_id: str
) -> MessageRecord | None:
    params = {"channel": channel, "provider_id": provider_message_id}
    row = (await session.execute(_BY_PROVIDER_ID, params)).first()
    return message_record(row) if row else None


async def find_by_provider_ids(
    session: AsyncSession, keys: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], MessageRecord]:
    """`find_by_provider_id` for several (channel, provider message id) keys in one statement;
    the keys not stored are left out."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    params = rows_params("keys", wanted, width=2, arrays=as_arrays(session))
    rows = await session.execute(_BY_PROVIDER_IDS.of(session), params)
    return {(row.channel, row.provider_message_id): message_record(row) for row in rows}


async def get_message(session: AsyncSession, customer_id: str, message_id: int) -> MessageRecord:
    params = {"customer_id": require_customer(customer_id), "message_id": message_id}
    row = (await session.execute(_GET, params)).first()
    if row is None:
        raise RecordNotFound(f"message {message_id} not found")
    return message_record(row)


async def existing_ids(session: AsyncSession, message_ids: Collection[int]) -> set[int]:
    """Those of `message_ids` still stored (an erasure may have removed some meanwhile)."""
    if not message_ids:
        return set()
    rows = await session.scalars(
        select(Message.id).where(values_in(session, Message.id, sorted(message_ids)))
    )
    return set(rows)


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
    params = _range(customer_id, episode_id, limit, after_id, before_id)
    query = _RECENT[(after_id is not None, before_id is not None)]
    rows = list(await session.execute(query, params))
    rows.reverse()
    return [message_record(row) for row in rows]


def _range(
    customer_id: str, episode_id: str, limit: int, after_id: int | None, before_id: int | None
) -> dict[str, object]:
    """The parameters of a read of an episode's newest messages between two ids."""
    return {
        "customer_id": require_customer(customer_id),
        "episode_id": episode_id,
        "after_id": after_id,
        "before_id": before_id,
        "limit": limit,
    }


async def window_lines(
    session: AsyncSession,
    customer_id: str,
    episode_id: str,
    *,
    limit: int,
    after_id: int | None = None,
    before_id: int | None = None,
) -> list[WindowLine]:
    """`recent_messages` with only the columns a window reads, as plain rows: the newest
    `limit` messages of an episode between the two ids, oldest first."""
    params = _range(customer_id, episode_id, limit, after_id, before_id)
    query = _LINES[(after_id is not None, before_id is not None)]
    rows = list(await session.execute(query, params))
    rows.reverse()
    return [
        WindowLine(
            id=row.id,
            role=row.role,
            text=row.text,
            token_count=row.token_count,
            channel=row.channel,
            created_at=row.created_at,
            transcript_confidence=row.transcript_confidence,
            supersedes_id=row.supersedes_id,
            canned=bool(row.canned),
            human_agent=row.human_agent,
        )
        for row in rows
    ]


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
    total = await session.scalar(_HISTORY_TOKENS, {"customer_id": require_customer(customer_id)})
    return int(total or 0)


async def unsummarized_tokens(
    session: AsyncSession, customer_id: str, episode_id: str, after_id: int | None
) -> int:
    params: dict[str, object] = {
        "customer_id": require_customer(customer_id),
        "episode_id": episode_id,
    }
    query = _UNSUMMARIZED
    if after_id is not None:
        query, params["after_id"] = _UNSUMMARIZED_AFTER, after_id
    return int(await session.scalar(query, params) or 0)


async def thread_messages(
    session: AsyncSession, thread_key: str, *, after_id: int | None = None, limit: int = 200
) -> list[MessageRecord]:
    """A chat thread's messages after a cursor, oldest first (web chat catch-up)."""
    query = select(Message).where(Message.thread_key == thread_key)
    if after_id is not None:
        query = query.where(Message.id > after_id)
    rows = await session.scalars(query.order_by(Message.id).limit(limit))
    return [message_record(row) for row in rows]


async def thread_identities(session: AsyncSession, thread_key: str) -> set[str]:
    """The external ids of the channel identities that wrote in a chat thread (who may read it
    is decided from them: a verified account's thread needs that account's token)."""
    rows = await session.scalars(
        select(ChannelIdentity.external_id)
        .join(Message, Message.identity_id == ChannelIdentity.id)
        .where(Message.thread_key == thread_key, Message.role == "user")
        .distinct()
    )
    return set(rows)


async def latest_in_episode(session: AsyncSession, episode_id: str) -> MessageRecord | None:
    """The episode's newest message (by id), whoever's it is."""
    row = await session.scalar(
        select(Message).where(Message.episode_id == episode_id).order_by(Message.id.desc()).limit(1)
    )
    return message_record(row) if row else None


async def metas_of_episode(session: AsyncSession, episode_id: str) -> list[MessageMeta]:
    """The `MessageMeta` of every message of the episode (a call's turns carry their
    transcript version there)."""
    rows = await session.scalars(select(Message.extra).where(Message.episode_id == episode_id))
    return [decode_meta(extra) for extra in rows]


def remembered_turns(
    customer_id: str, exclude_episode: str | None, identity_id: str | None
) -> list[ColumnElement[bool]]:
    """What every read of turns for recall asks: the customer's user and assistant turns,
    none of the gateway's own notices, outside `exclude_episode` and, with `identity_id`, of
    that identity only."""
    conditions = [
        Message.customer_id == require_customer(customer_id),
        Message.role.in_(("user", "assistant")),
        meta_text(Message.extra, CANNED_KEY).is_(None),  # the gateway's own notices are no memory
    ]
    if exclude_episode is not None:
        conditions.append(Message.episode_id != exclude_episode)
    if identity_id is not None:
        conditions.append(Message.identity_id == identity_id)
    return conditions


async def typed_turns(
    session: AsyncSession,
    customer_id: str,
    *,
    limit: int,
    skip_channels: Collection[str] = (),
    exclude_episode: str | None = None,
    identity_id: str | None = None,
) -> list[TurnLine]:
    """The customer's newest `limit` user and assistant turns that were typed (not on
    `skip_channels`, no transcript confidence, not canned), newest first, outside
    `exclude_episode` and, with `identity_id`, of that identity only. Only the columns recall
    reads are fetched."""
    query = select(
        Message.id,
        Message.episode_id,
        Message.role,
        Message.text,
        Message.created_at,
        Message.supersedes_id,
        meta_text(Message.extra, SPEAKER_KEY),
    ).where(
        Message.channel.not_in(sorted(skip_channels)),
        Message.transcript_confidence.is_(None),
        *remembered_turns(customer_id, exclude_episode, identity_id),
    )
    rows = await session.execute(query.order_by(Message.id.desc()).limit(limit))
    return [
        TurnLine(
            id=message_id,
            episode_id=episode_id,
            role=role,
            text=text,
            created_at=created_at,
            supersedes_id=supersedes_id,
            speaker=speaker,
        )
        for message_id, episode_id, role, text, created_at, supersedes_id, speaker in rows
    ]
