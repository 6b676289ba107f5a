"""Apply one compaction job to storage: plan, compact, validate, store — in one transaction.

The summary pointer (`last_message_id`) advances in the same transaction that writes the new
summary and facts, so a job applied twice (a reclaimed job, a replayed enqueue) finds nothing
left to do the second time. Every run that changes memory writes a `CompactionTrace`, naming the
compactor (``offline``, ``llm``, or ``offline-fallback`` with the model's error).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from context.compaction import (
    MULTI_VALUED_KEYS,
    CompactionResult,
    ExtractedFact,
    SourceMessage,
    SummarySentence,
    compact_offline,
    plan_compaction,
    should_compact,
)
from gateway.memory.llm_compactor import CompactionFailed, LLMCompactor, describe
from gateway.memory.queue import CompactionJob
from gateway.providers import ProviderError
from gateway.storage.records import FactRecord, MessageRecord, NewFact
from gateway.storage.repositories import customers, episodes, facts, messages, summaries
from gateway.storage.updates import NewCompactionTrace
from gateway.tenants import TenantSettings

log = logging.getLogger("relaydesk.memory")

TRANSCRIPT_CHANNELS = frozenset({"phone"})
MAX_MESSAGES_PER_RUN = 2_000


@dataclass(frozen=True, slots=True)
class CompactionOutcome:
    compacted: int
    facts_written: int
    pointer: int | None


def source_message(record: MessageRecord) -> SourceMessage:
    speaker = record.meta.speaker or ("customer" if record.role == "user" else "assistant")
    return SourceMessage(
        id=record.id,
        role="user" if record.role == "user" else "assistant",
        text=record.text,
        tokens=record.token_count,
        created_at=record.created_at,
        channel=record.channel,
        speaker=str(speaker),
        confidence=record.transcript_confidence,
    )


def sentences_json(sentences: Sequence[SummarySentence]) -> list[dict[str, Any]]:
    return [
        {
            "text": s.text,
            "source_message_id": s.source_message_id,
            "date": s.date,
            "speaker": s.speaker,
        }
        for s in sentences
    ]


def sentences_from(raw: object) -> tuple[SummarySentence, ...]:
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if isinstance(item, dict) and "text" in item and "source_message_id" in item:
            out.append(
                SummarySentence(
                    text=str(item["text"]),
                    source_message_id=int(item["source_message_id"]),
                    date=str(item.get("date", "")),
                    speaker=item.get("speaker"),
                )
            )
    return tuple(out)


def _fact_json(record: FactRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "key": record.key,
        "value": record.value,
        "scope": record.scope,
        "source_message_id": record.source_message_id,
        "confirmed": record.confirmed,
    }


@dataclass(frozen=True, slots=True)
class _Batch:
    """What one run compacts, read under the episode lock."""

    episode_id: str
    channel: str
    version: int
    transcript_confidence: float | None
    pointer: int | None
    previous_summary: str | None
    previous_sentences: tuple[SummarySentence, ...]
    pending: list[MessageRecord]
    chosen: list[SourceMessage]
    compact_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Run:
    """A compaction result and what the trace says about how it was made."""

    result: CompactionResult
    compactor: str  # "offline", "llm" or "offline-fallback"
    tokens_in: int
    tokens_out: int
    model: str | None = None
    error: str | None = None


async def compact_episode(
    sessions: async_sessionmaker[AsyncSession],
    job: CompactionJob,
    *,
    settings: TenantSettings,
    counter: TokenCounter,
    compactor: LLMCompactor | None = None,
) -> CompactionOutcome:
    """Compact the episode of ``job`` once, offline or with ``compactor`` (the tenant's summary
    model). A model answer that cannot be used, or a failed call, falls back to the offline
    compactor; the trace then says ``offline-fallback`` and records the error.

    The model call runs between two transactions, so no lock is held while it waits; the second
    one writes only if the summary pointer and the transcript version are still those read by
    the first (otherwise another run got there first and this one changes nothing).
    """
    started = time.perf_counter()
    if compactor is None:
        async with sessions.begin() as session:
            batch = await _load(session, job, settings)
            if isinstance(batch, CompactionOutcome):
                return batch
            return await _apply(session, job, batch, _offline(batch, counter), counter, started)
    async with sessions.begin() as session:
        batch = await _load(session, job, settings)
    if isinstance(batch, CompactionOutcome):
        return batch
    run = await _with_model(compactor, batch, counter)
    async with sessions.begin() as session:
        # The customer first, as an erasure takes it (`customers.hold_customer`); then
        # compactions of one episode run one at a time (`lock_episode`).
        if not await customers.hold_customer(session, job.customer_id):
            return CompactionOutcome(0, 0, None)
        episode = await episodes.lock_episode(session, job.episode_id)
        pointer = await summaries.summary_pointer(session, job.episode_id)
        if episode is None or episode.version != batch.version or pointer != batch.pointer:
            return CompactionOutcome(0, 0, pointer)
        if await messages.existing_ids(session, batch.compact_ids) != set(batch.compact_ids):
            return CompactionOutcome(0, 0, pointer)  # a message was erased meanwhile
        return await _apply(session, job, batch, run, counter, started)


async def _load(
    session: AsyncSession, job: CompactionJob, settings: TenantSettings
) -> _Batch | CompactionOutcome:
    # Held until the commit: an erasure of the customer waits, or already removed it.
    if not await customers.hold_customer(session, job.customer_id):
        return CompactionOutcome(0, 0, None)
    episode = await episodes.lock_episode(session, job.episode_id)
    if episode is None or episode.customer_id != job.customer_id:
        return CompactionOutcome(0, 0, None)
    summary = await summaries.summary_of_locked_episode(session, episode.id)
    pointer = summary.last_message_id if summary else None
    final = job.reason == "closed" or episode.status == "closed"
    if not final and not should_compact(
        await messages.unsummarized_tokens(session, job.customer_id, episode.id, pointer),
        high_water=settings.threshold_tokens,
    ):
        # Not due (a job queued again while an earlier one compacted): what the messages
        # would be read for — their tokens — is one sum away, an upper bound of the plan's.
        return CompactionOutcome(0, 0, pointer)
    pending = await messages.recent_messages(
        session,
        job.customer_id,
        episode.id,
        limit=MAX_MESSAGES_PER_RUN,
        after_id=pointer,
    )
    # Only the current transcript version, only real speech, and no canned reply is summarized.
    replaced = {m.supersedes_id for m in pending if m.supersedes_id is not None}
    usable = [
        m
        for m in pending
        if m.role in ("user", "assistant")
        and not m.meta.canned
        and m.id not in replaced
        and m.meta.in_transcript(episode.version)
        and m.meta.is_speech
    ]
    sources = [source_message(m) for m in usable]
    compact_ids = _to_compact(sources, settings, final=final)
    if not compact_ids:
        return CompactionOutcome(0, 0, pointer)
    return _Batch(
        episode_id=episode.id,
        channel=episode.channel,
        version=episode.version,
        transcript_confidence=episode.transcript_confidence,
        pointer=pointer,
        previous_summary=summary.summary if summary else None,
        previous_sentences=sentences_from(list(summary.sentences) if summary else None),
        pending=list(pending),
        chosen=[s for s in sources if s.id in compact_ids],
        compact_ids=compact_ids,
    )


def _offline(batch: _Batch, counter: TokenCounter) -> _Run:
    result = compact_offline(batch.chosen, batch.previous_summary, batch.previous_sentences)
    return _Run(
        result,
        "offline",
        tokens_in=sum(s.tokens for s in batch.chosen),
        tokens_out=counter.count(result.summary),
    )


async def _with_model(compactor: LLMCompactor, batch: _Batch, counter: TokenCounter) -> _Run:
    try:
        done = await compactor.run(batch.chosen, batch.previous_summary)
    except (CompactionFailed, ProviderError) as error:
        log.warning(
            "model compaction failed, offline fallback",
            extra={"fields": {"episode": batch.episode_id, "error": describe(error)}},
        )
        fallback = _offline(batch, counter)
        # The tokens a refused answer cost, when there was one; else the offline counts.
        refused = error.completion if isinstance(error, CompactionFailed) else None
        usage = refused.usage if refused is not None else None
        return _Run(
            fallback.result,
            "offline-fallback",
            tokens_in=usage.prompt_tokens if usage else fallback.tokens_in,
            tokens_out=usage.completion_tokens if usage else fallback.tokens_out,
            model=compactor.model,
            error=describe(error),
        )
    usage = done.completion.usage
    return _Run(
        done.result,
        "llm",
        tokens_in=usage.prompt_tokens,
        tokens_out=usage.completion_tokens,
        model=done.completion.model,
    )


async def _apply(
    session: AsyncSession,
    job: CompactionJob,
    batch: _Batch,
    run: _Run,
    counter: TokenCounter,
    started: float,
) -> CompactionOutcome:
    result = run.result
    before = [_fact_json(f) for f in await facts.current_facts(session, job.customer_id)]
    written = await _store_facts(session, job.customer_id, result, batch.pending)
    new_pointer = max(batch.compact_ids)
    transcript = batch.channel in TRANSCRIPT_CHANNELS
    await summaries.save_summary(
        session,
        customer_id=job.customer_id,
        episode_id=batch.episode_id,
        summary=result.summary,
        last_message_id=new_pointer,
        origin_channel=batch.channel,
        token_count=counter.count(result.summary),
        transcript_confidence=batch.transcript_confidence if transcript else None,
        sentences=sentences_json(result.sentences),
    )
    after = [_fact_json(f) for f in await facts.current_facts(session, job.customer_id)]
    await summaries.add_trace(
        session,
        NewCompactionTrace(
            customer_id=job.customer_id,
            compactor=run.compactor,
            model=run.model,
            error=run.error,
            episode_id=batch.episode_id,
            facts_before={"facts": before},
            facts_after={
                "facts": after,
                "refused": [
                    {"key": fact.key, "source_message_id": fact.source_message_id, "why": why}
                    for fact, why in result.refused
                ],
            },
            summary_before=batch.previous_summary,
            summary_after=result.summary,
            tokens_in=run.tokens_in,
            tokens_out=run.tokens_out,
            duration_ms=int((time.perf_counter() - started) * 1000),
        ),
    )
    return CompactionOutcome(len(batch.compact_ids), written, new_pointer)


def _to_compact(
    sources: Sequence[SourceMessage], settings: TenantSettings, *, final: bool
) -> tuple[int, ...]:
    if final:
        return tuple(s.id for s in sources)
    plan = plan_compaction(
        sources,
        high_water=settings.threshold_tokens,
        low_water=settings.low_water_tokens,
        keep_recent=settings.keep_recent_turns,
    )
    return plan.compact_ids if plan is not None else ()


async def _store_facts(
    session: AsyncSession,
    customer_id: str,
    result: CompactionResult,
    pending: Sequence[MessageRecord],
) -> int:
    return await store_facts(session, customer_id, result.facts, {m.id: m for m in pending})


async def store_facts(
    session: AsyncSession,
    customer_id: str,
    found: Sequence[ExtractedFact],
    sources: Mapping[int, MessageRecord],
) -> int:
    """Write the facts in source order, so a later value supersedes an earlier one; a typed
    message repeating a transcript-only value confirms it. A fact already stored from the same
    message (extracted when the message arrived, then again by compaction) changes nothing."""
    written = 0
    known = await facts.stored_from(session, customer_id, {f.source_message_id for f in found})
    for fact in sorted(found, key=lambda f: f.source_message_id):
        if (fact.key, fact.value, fact.source_message_id) in known:
            continue
        source = sources.get(fact.source_message_id)
        # Heard, not typed: a call's turns, and a voice note's transcript.
        typed = source is None or (
            source.channel not in TRANSCRIPT_CHANNELS and source.transcript_confidence is None
        )
        confidence = fact.confidence
        if not typed and source is not None and source.transcript_confidence is not None:
            # A fact heard on a call is only as sure as the words it was heard in.
            confidence = min(confidence, source.transcript_confidence)
        stored = await facts.record_fact(
            session,
            customer_id,
            NewFact(
                key=fact.key,
                value=fact.value,
                scope=fact.scope,
                source_message_id=fact.source_message_id,
                tags=fact.tags,
                confidence=confidence,
                confirmed=typed,
            ),
            single_valued=fact.key not in MULTI_VALUED_KEYS,
            source=source,
        )
        if stored.source_message_id == fact.source_message_id:
            written += 1
        elif typed and not stored.confirmed:
            await facts.confirm_fact(session, customer_id, stored.id, fact.source_message_id)
            written += 1
    return written
