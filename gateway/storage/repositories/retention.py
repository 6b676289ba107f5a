"""Retention deletes: one batch of a channel's raw messages older than a cutoff, and what
refers to them, in one short transaction (the caller commits each batch).

What a batch does with its messages (`delete_expired`):

- the turns of its inbound messages go, with their outbound (delivery) rows; a turn kept whose
  reply is deleted forgets the reply; a newer version whose older version is deleted forgets it;
- with `memory_too` (the tenant's `retention_covers_memory`): facts sourced from them go, and with
  each fact the facts it superseded (its history); episode summaries whose last message or any
  sentence comes from them go, with their episodes' compaction traces (which copy them; the
  next compaction rebuilds them from the messages kept);
- a message that memory kept still points at (a fact's source or confirmation, a summary's last
  message) cannot go without its fact or summary (the references are required columns): its
  content is erased instead (empty text; words, media and extra cleared; `redacted` set), so the
  text is gone as retention promises and the fact keeps its source's id, channel and episode;
- each episode's `token_total` loses the deleted and erased messages' tokens; the episode rows
  stay (a summary may outlive its messages).

Messages are otherwise immutable (`models.ImmutableRowError` guards ORM updates): these Core
statements are the retention exception, and no other writer deletes or erases messages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_, case, delete, func, not_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from gateway.storage.models import CompactionTrace, EpisodeSummary, Fact, OutboundMessage, TurnRow
from gateway.storage.repositories.tables import EPISODES, MESSAGES
from gateway.tenant_ref import TenantRef

# What a message erased for memory looks like; such rows are not picked again.
_ERASED = and_(MESSAGES.c.redacted.is_(True), MESSAGES.c.text == "")


@dataclass(slots=True)
class RetentionBatch:
    """What one batch removed, by kind (the `kind` label of the metric)."""

    counts: Counter[str] = field(default_factory=Counter)

    @property
    def messages(self) -> int:
        return self.counts["messages"] + self.counts["messages_erased"]


async def message_tenants(session: AsyncSession) -> list[TenantRef]:
    """The tenants stored messages came through, each once."""
    rows = await session.scalars(select(MESSAGES.c.tenant).distinct().order_by(MESSAGES.c.tenant))
    return [TenantRef.decode(encoded) for encoded in rows]


async def expired_message_ids(
    session: AsyncSession,
    *,
    channel: str,
    before: datetime,
    limit: int,
    tenant: TenantRef | None = None,
) -> list[int]:
    """The oldest `limit` ids of the channel's messages (of `tenant`, unless None) written
    before `before`, not yet erased."""
    conditions = [MESSAGES.c.channel == channel, MESSAGES.c.created_at < before, not_(_ERASED)]
    if tenant is not None:
        conditions.append(MESSAGES.c.tenant == tenant.encode())
    rows = await session.scalars(
        select(MESSAGES.c.id)
        .where(*conditions)
        .order_by(MESSAGES.c.id)
        .limit(limit)
        # Two background processes running retention at once take different rows (PostgreSQL;
        # SQLite has one writer at a time anyway), so no episode loses a message's tokens twice.
        .with_for_update(skip_locked=True)
    )
    return list(rows)


async def delete_expired(
    session: AsyncSession, ids: Collection[int], *, memory_too: bool
) -> RetentionBatch:
    """Delete (or erase, see the module docstring) these messages and what refers to them."""
    batch = RetentionBatch()
    if not ids:
        return batch
    id_list = list(ids)
    if memory_too:
        batch.counts["facts"] = await _delete_facts_of(session, id_list)
        batch.counts["summaries"] = await _delete_summaries_of(session, id_list)
    kept_for_memory = await _still_referenced(session, id_list)
    gone = [i for i in id_list if i not in kept_for_memory]
    await _subtract_tokens(session, id_list)
    batch.counts["outbound"], batch.counts["turns"] = await _delete_turns_of(session, gone)
    if kept_for_memory:
        await session.execute(
            update(MESSAGES)
            .where(MESSAGES.c.id.in_(sorted(kept_for_memory)))
            .values(text="", words=None, media=None, extra=None, redacted=True, token_count=0)
        )
        batch.counts["messages_erased"] = len(kept_for_memory)
    if gone:
        await session.execute(
            update(MESSAGES)
            .where(MESSAGES.c.supersedes_id.in_(gone), MESSAGES.c.id.not_in(gone))
            .values(supersedes_id=None)
        )
        result = await session.execute(delete(MESSAGES).where(MESSAGES.c.id.in_(gone)))
        batch.counts["messages"] = _rowcount(result)
    return batch


async def _delete_facts_of(session: AsyncSession, ids: list[int]) -> int:
    """Facts whose source is among `ids` (and no confirmation kept outside them), with the
    facts they superseded."""
    doomed = set(
        await session.scalars(
            select(Fact.id).where(
                Fact.source_message_id.in_(ids),
                or_(
                    Fact.confirmed_by_message_id.is_(None),
                    Fact.confirmed_by_message_id.in_(ids),
                ),
            )
        )
    )
    frontier = set(doomed)
    while frontier:  # the history of a doomed fact goes with it
        older = set(await session.scalars(select(Fact.id).where(Fact.superseded_by.in_(frontier))))
        frontier = older - doomed
        doomed |= frontier
    if not doomed:
        return 0
    # Superseded first: no row is deleted while another doomed one still points at it.
    await session.execute(update(Fact).where(Fact.id.in_(doomed)).values(superseded_by=None))
    result = await session.execute(delete(Fact).where(Fact.id.in_(doomed)))
    return _rowcount(result)


async def _delete_summaries_of(session: AsyncSession, ids: list[int]) -> int:
    episodes = set(
        await session.scalars(
            select(MESSAGES.c.episode_id).where(MESSAGES.c.id.in_(ids)).distinct()
        )
    )
    if not episodes:
        return 0
    wanted = set(ids)
    doomed = [
        row.id
        for row in (
            await session.execute(
                select(
                    EpisodeSummary.id, EpisodeSummary.last_message_id, EpisodeSummary.sentences
                ).where(EpisodeSummary.episode_id.in_(episodes))
            )
        )
        if row.last_message_id in wanted or wanted & set(_sentence_sources(row.sentences))
    ]
    if not doomed:
        return 0
    # A compaction trace copies the summary and facts it wrote: it goes with the summary.
    rebuilt = select(EpisodeSummary.episode_id).where(EpisodeSummary.id.in_(doomed))
    await session.execute(delete(CompactionTrace).where(CompactionTrace.episode_id.in_(rebuilt)))
    result = await session.execute(delete(EpisodeSummary).where(EpisodeSummary.id.in_(doomed)))
    return _rowcount(result)


def _sentence_sources(sentences: object) -> Iterable[int]:
    if not isinstance(sentences, list):
        return
    for item in sentences:
        source = item.get("source_message_id") if isinstance(item, dict) else None
        if isinstance(source, int):
            yield source


async def _still_referenced(session: AsyncSession, ids: list[int]) -> set[int]:
    """The ids a kept fact or summary points at."""
    referenced = set(
        await session.scalars(select(Fact.source_message_id).where(Fact.source_message_id.in_(ids)))
    )
    referenced |= set(
        await session.scalars(
            select(Fact.confirmed_by_message_id).where(Fact.confirmed_by_message_id.in_(ids))
        )
    )
    referenced |= set(
        await session.scalars(
            select(EpisodeSummary.last_message_id).where(EpisodeSummary.last_message_id.in_(ids))
        )
    )
    return referenced


async def _subtract_tokens(session: AsyncSession, ids: list[int]) -> None:
    per_episode = await session.execute(
        select(MESSAGES.c.episode_id, func.sum(MESSAGES.c.token_count))
        .where(MESSAGES.c.id.in_(ids))
        .group_by(MESSAGES.c.episode_id)
    )
    for episode_id, tokens in per_episode.all():
        if tokens:
            await session.execute(
                update(EPISODES)
                .where(EPISODES.c.id == episode_id)
                .values(
                    token_total=case(
                        (EPISODES.c.token_total > tokens, EPISODES.c.token_total - tokens),
                        else_=0,
                    )
                )
            )


async def _delete_turns_of(session: AsyncSession, gone: list[int]) -> tuple[int, int]:
    """Delete the turns of these inbound messages and the outbound rows of those turns or of
    these replies; turns kept forget a reply among them. Returns (outbound, turns)."""
    if not gone:
        return 0, 0
    turns = list(
        await session.scalars(select(TurnRow.id).where(TurnRow.inbound_message_id.in_(gone)))
    )
    outbound_where: ColumnElement[bool] = OutboundMessage.reply_message_id.in_(gone)
    if turns:
        outbound_where = or_(outbound_where, OutboundMessage.turn_id.in_(turns))
    outbound = _rowcount(await session.execute(delete(OutboundMessage).where(outbound_where)))
    await session.execute(
        update(TurnRow).where(TurnRow.reply_message_id.in_(gone)).values(reply_message_id=None)
    )
    deleted = 0
    if turns:
        deleted = _rowcount(await session.execute(delete(TurnRow).where(TurnRow.id.in_(turns))))
    return outbound, deleted


def _rowcount(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
