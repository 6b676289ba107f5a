"""What a customer owns, by the channel identity each record came from, and moving records to
another customer (operator merges and splits)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.errors import require_customer
from gateway.storage.models import (
    ChannelIdentity,
    CompactionTrace,
    Conversation,
    CustomerIdentifier,
    Episode,
    EpisodeSummary,
    Fact,
    Message,
)
from gateway.storage.records import SourcedRecord
from gateway.storage.repositories import conversations

# Record kind → (table, primary key column, column naming the source identity). A channel
# identity's kind is "identity" (as in `identity.IDENTITY_RECORD`): its own source.
_OWNED: dict[str, tuple[Any, Any, Any]] = {
    "identity": (ChannelIdentity, ChannelIdentity.id, ChannelIdentity.id),
    "identifier": (
        CustomerIdentifier,
        CustomerIdentifier.id,
        CustomerIdentifier.source_identity_id,
    ),
    "episode": (Episode, Episode.id, Episode.identity_id),
    "message": (Message, Message.id, Message.identity_id),
    "fact": (Fact, Fact.id, Fact.source_identity_id),
    # Re-keyed as they move (`conversations.move_conversations`): the key names the customer.
    "conversation": (Conversation, Conversation.id, Conversation.identity_id),
}
_INTEGER_IDS = frozenset({"identifier", "message", "fact"})
_CHUNK = 500


async def sourced_records(session: AsyncSession, customer_id: str) -> list[SourcedRecord]:
    """Every record of the customer that names the identity it came from, kind by kind
    (identity, identifier, episode, message, fact, conversation); records without a source
    are left out."""
    require_customer(customer_id)
    records: list[SourcedRecord] = []
    for kind, (table, pk, source) in _OWNED.items():
        rows = await session.execute(select(pk, source).where(table.customer_id == customer_id))
        records.extend(
            SourcedRecord(kind, str(record_id), source_id)
            for record_id, source_id in rows
            if source_id is not None
        )
    return records


async def reassign(
    session: AsyncSession, ids_by_kind: Mapping[str, Sequence[str]], to_customer: str
) -> None:
    """Give the records (ids by kind, as `sourced_records` names them) to `to_customer`; the
    summaries and compaction traces of moved episodes follow their episode."""
    require_customer(to_customer)
    for kind, ids in ids_by_kind.items():
        if kind == "conversation":
            await conversations.move_conversations(session, list(ids), to_customer)
            continue
        table, pk, _ = _OWNED[kind]
        typed_ids: list[Any] = [int(i) for i in ids] if kind in _INTEGER_IDS else list(ids)
        for start in range(0, len(typed_ids), _CHUNK):
            await session.execute(
                update(table)
                .where(pk.in_(typed_ids[start : start + _CHUNK]))
                .values(customer_id=to_customer)
            )
    moved_episodes = list(ids_by_kind.get("episode", ()))
    for start in range(0, len(moved_episodes), _CHUNK):
        chunk = moved_episodes[start : start + _CHUNK]
        for derived in (EpisodeSummary, CompactionTrace):
            await session.execute(
                update(derived).where(derived.episode_id.in_(chunk)).values(customer_id=to_customer)
            )
    await session.flush()
