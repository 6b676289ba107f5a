"""Deleting single messages and what was derived from them, in the caller's transaction: an
operator removing a mistake or a recording made without consent, or a retention job.

`erase_messages(session, ids)` widens the ids to every version of each message (edits, and
the same turn in every transcript version of a call) and to the replies answering them, then
removes: the messages; the turns and deliveries they started; facts sourced to them (a fact
confirmed by another message keeps that one as its source; a fact they only confirmed stays
unconfirmed); the summaries and compaction traces of their episodes (the summary is rebuilt
from what remains: `MessageErasure.rebuild`); facts named in other traces; audit details
holding a removed fact's value. The statements take sets of ids, never one row at a time.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import (
    CompactionTrace,
    Episode,
    EpisodeSummary,
    Fact,
    InboxMessage,
    Message,
    OutboundMessage,
    TurnRow,
)
from gateway.storage.repositories.erasure import lock_customers
from gateway.storage.repositories.scrub import rowcount, scrub_audit

# A call's turn `index` of transcript version `v`: "<call id>:v<version>:<index>".
_CALL_TURN = re.compile(r"^(?P<call>.+):v\d+:(?P<index>\d+)$")
_CHUNK = 500


@dataclass(frozen=True, slots=True)
class MessageErasure:
    """What `erase_messages` removed: rows per table, the messages' (channel, provider id)
    for the Redis dedupe keys, the customers touched (their recall caches), and the episodes
    whose summary must be rebuilt (customer id, episode id)."""

    counts: dict[str, int] = field(default_factory=dict)
    message_ids: tuple[int, ...] = ()
    provider_messages: tuple[tuple[str, str], ...] = ()
    customer_ids: tuple[str, ...] = ()
    rebuild: tuple[tuple[str, str], ...] = ()


def _parts(ids: Collection[int]) -> list[list[int]]:
    items = sorted(ids)
    return [items[start : start + _CHUNK] for start in range(0, len(items), _CHUNK)]


async def _rows(session: AsyncSession, ids: Collection[int]) -> list[Any]:
    found: list[Any] = []
    for part in _parts(ids):
        found.extend(
            await session.execute(
                select(
                    Message.id,
                    Message.customer_id,
                    Message.episode_id,
                    Message.channel,
                    Message.provider_message_id,
                    Message.supersedes_id,
                    Message.token_count,
                ).where(Message.id.in_(part))
            )
        )
    return found


async def widen(session: AsyncSession, message_ids: Collection[int]) -> list[Any]:
    """The stored messages of `message_ids` with all their versions (edits both ways, a
    call's turn in every transcript version) and the replies of the turns they started."""
    wanted = set(message_ids)
    while True:
        rows = await _rows(session, wanted)
        grown = {row.id for row in rows}
        grown |= {row.supersedes_id for row in rows if row.supersedes_id is not None}
        for part in _parts(grown):
            grown.update(
                await session.scalars(select(Message.id).where(Message.supersedes_id.in_(part)))
            )
            grown.update(
                reply
                for reply in await session.scalars(
                    select(TurnRow.reply_message_id).where(TurnRow.inbound_message_id.in_(part))
                )
                if reply is not None
            )
        grown |= await _call_turn_versions(session, rows)
        if grown <= {row.id for row in rows}:
            return rows
        wanted = grown


def _call_turn(row: Any) -> tuple[str, str] | None:
    found = _CALL_TURN.match(row.provider_message_id or "") if row.channel == "phone" else None
    return (found["call"], found["index"]) if found is not None else None


async def _call_turn_versions(session: AsyncSession, rows: Sequence[Any]) -> set[int]:
    """The ids of the same call turns in every transcript version, one read per call."""
    wanted: dict[str, set[tuple[str, str]]] = {}
    for row in rows:
        turn = _call_turn(row)
        if turn is not None:
            wanted.setdefault(row.episode_id, set()).add(turn)
    found: set[int] = set()
    for episode_id, turns in wanted.items():
        candidates = await session.execute(
            select(Message.id, Message.channel, Message.provider_message_id).where(
                Message.episode_id == episode_id, Message.provider_message_id.is_not(None)
            )
        )
        found.update(row.id for row in candidates if _call_turn(row) in turns)
    return found


async def erase_messages(session: AsyncSession, message_ids: Collection[int]) -> MessageErasure:
    """Erase the messages and everything derived from them (see the module docstring)."""
    if not message_ids:
        return MessageErasure()
    rows = await widen(session, message_ids)
    if not rows:
        return MessageErasure()
    customers = sorted({row.customer_id for row in rows})
    await lock_customers(session, customers)
    rows = await widen(session, {row.id for row in rows})  # as of the lock
    ids = sorted(row.id for row in rows)
    counts: dict[str, int] = {}

    def add(table: str, result: object) -> None:
        counts[table] = counts.get(table, 0) + rowcount(result)

    removed_values = await _erase_facts(session, ids, add)
    episodes = sorted({(row.customer_id, row.episode_id) for row in rows})
    episode_ids = [episode for _, episode in episodes]
    add(
        "episode_summaries",
        await session.execute(
            delete(EpisodeSummary).where(EpisodeSummary.episode_id.in_(episode_ids))
        ),
    )
    add(
        "compaction_traces",
        await session.execute(
            delete(CompactionTrace).where(CompactionTrace.episode_id.in_(episode_ids))
        ),
    )
    await _scrub_traces(session, customers, set(ids))
    for part in _parts(ids):
        turns = select(TurnRow.id).where(TurnRow.inbound_message_id.in_(part))
        add(
            "outbound_messages",
            await session.execute(
                delete(OutboundMessage).where(
                    or_(
                        OutboundMessage.turn_id.in_(turns),
                        OutboundMessage.reply_message_id.in_(part),
                    )
                )
            ),
        )
        add(
            "turns",
            await session.execute(delete(TurnRow).where(TurnRow.inbound_message_id.in_(part))),
        )
        await session.execute(
            update(TurnRow).where(TurnRow.reply_message_id.in_(part)).values(reply_message_id=None)
        )
    # Newest first: a version names the older row it supersedes, never a newer one.
    for part in reversed(_parts(ids)):
        add("messages", await session.execute(delete(Message).where(Message.id.in_(part))))
    await _subtract_tokens(session, rows)
    provider = sorted(
        {(row.channel, row.provider_message_id) for row in rows if row.provider_message_id}
    )
    for begin in range(0, len(provider), _CHUNK):
        pairs = provider[begin : begin + _CHUNK]
        add(
            "inbox_messages",
            await session.execute(
                delete(InboxMessage).where(
                    tuple_(InboxMessage.channel, InboxMessage.provider_message_id).in_(pairs)
                )
            ),
        )
    scrubbed = await scrub_audit(session, naming=sorted(removed_values), within_subjects=customers)
    if scrubbed:
        counts["audit_log_scrubbed"] = scrubbed
    return MessageErasure(
        counts={table: count for table, count in counts.items() if count},
        message_ids=tuple(ids),
        provider_messages=tuple(provider),
        customer_ids=tuple(customers),
        rebuild=tuple(episodes),
    )


async def _erase_facts(session: AsyncSession, ids: Sequence[int], add: Any) -> set[str]:
    """Drop the facts sourced to `ids` (or re-source those another message confirmed) and
    unconfirm those `ids` only confirmed; the values of the dropped facts."""
    sourced: list[Any] = []
    for part in _parts(ids):
        sourced.extend(
            await session.execute(
                select(Fact.id, Fact.value, Fact.confirmed_by_message_id, Fact.superseded_by).where(
                    Fact.source_message_id.in_(part)
                )
            )
        )
    gone = set(ids)
    keep = {
        row.id: row.confirmed_by_message_id
        for row in sourced
        if row.confirmed_by_message_id not in gone and row.confirmed_by_message_id is not None
    }
    for fact_id, other in keep.items():
        source = (
            await session.execute(
                select(Message.channel, Message.episode_id, Message.identity_id).where(
                    Message.id == other
                )
            )
        ).one()
        await session.execute(
            update(Fact)
            .where(Fact.id == fact_id)
            .values(
                source_message_id=other,
                source_channel=source.channel,
                source_episode_id=source.episode_id,
                source_identity_id=source.identity_id,
            )
        )
    for part in _parts(ids):
        await session.execute(
            update(Fact)
            .where(Fact.confirmed_by_message_id.in_(part))
            .values(confirmed=False, confirmed_at=None, confirmed_by_message_id=None)
        )
    dropped = {row.id: row.superseded_by for row in sourced if row.id not in keep}
    if not dropped:
        return set()

    # A fact that an erased one superseded is superseded by what came after it, or is current
    # again: the correction it lost was never said.
    def successor(fact_id: int | None) -> int | None:
        seen: set[int] = set()
        while fact_id is not None and fact_id in dropped and fact_id not in seen:
            seen.add(fact_id)
            fact_id = dropped[fact_id]
        return fact_id

    by_successor: dict[int | None, list[int]] = {}
    for fact_id in dropped:
        by_successor.setdefault(successor(fact_id), []).append(fact_id)
    for after, replaced in by_successor.items():
        for part in _parts(replaced):
            await session.execute(
                update(Fact).where(Fact.superseded_by.in_(part)).values(superseded_by=after)
            )
    for part in _parts(dropped):
        add("facts", await session.execute(delete(Fact).where(Fact.id.in_(part))))
    return {row.value for row in sourced if row.id in dropped}


async def _scrub_traces(session: AsyncSession, customer_ids: Sequence[str], ids: set[int]) -> None:
    """Other episodes' traces list the customer's facts before and after: the facts sourced to
    erased messages leave those lists."""
    rows = await session.execute(
        select(CompactionTrace.id, CompactionTrace.facts_before, CompactionTrace.facts_after).where(
            CompactionTrace.customer_id.in_(list(customer_ids))
        )
    )
    for trace_id, before, after in rows.all():
        cleaned_before, cleaned_after = _without(before, ids), _without(after, ids)
        if cleaned_before != before or cleaned_after != after:
            await session.execute(
                update(CompactionTrace)
                .where(CompactionTrace.id == trace_id)
                .values(facts_before=cleaned_before, facts_after=cleaned_after)
            )


def _without(facts: dict[str, Any] | None, ids: set[int]) -> dict[str, Any]:
    return {
        name: [
            item
            for item in entries
            if not (isinstance(item, dict) and item.get("source_message_id") in ids)
        ]
        if isinstance(entries, list)
        else entries
        for name, entries in (facts or {}).items()
    }


async def _subtract_tokens(session: AsyncSession, rows: Sequence[Any]) -> None:
    by_episode: dict[str, int] = {}
    for row in rows:
        by_episode[row.episode_id] = by_episode.get(row.episode_id, 0) + int(row.token_count)
    for episode_id, tokens in by_episode.items():
        await session.execute(
            update(Episode)
            .where(Episode.id == episode_id)
            .values(token_total=Episode.token_total - tokens)
        )


async def erase_episode(session: AsyncSession, episode_id: str) -> MessageErasure | None:
    """Erase one episode (a conversation, a call with all its transcript versions): its
    messages as `erase_messages` does, then the episode itself; None when it is unknown."""
    customer_id = await session.scalar(select(Episode.customer_id).where(Episode.id == episode_id))
    if customer_id is None:
        return None
    await lock_customers(session, [customer_id])
    ids = list(await session.scalars(select(Message.id).where(Message.episode_id == episode_id)))
    erased = await erase_messages(session, ids)
    for derived in (EpisodeSummary, CompactionTrace):
        await session.execute(delete(derived).where(derived.episode_id == episode_id))
    result = await session.execute(delete(Episode).where(Episode.id == episode_id))
    counts = dict(erased.counts)
    counts["episodes"] = rowcount(result)
    return MessageErasure(
        counts=counts,
        message_ids=erased.message_ids,
        provider_messages=erased.provider_messages,
        customer_ids=tuple(sorted({*erased.customer_ids, customer_id})),
        rebuild=tuple(pair for pair in erased.rebuild if pair[1] != episode_id),
    )
