"""The offline compactor and the per-episode summary state it advances.

``compact_offline`` turns the messages a plan consumes into sourced facts (rule-based
extractors) and an extractive summary merged with the previous one. ``compact_episode`` is the
whole pure step a worker runs: plan (or final plan for a closed episode), compact, and the new
``SummaryState``. A model-based compactor produces the same ``CompactionResult`` and must pass its
facts through ``accept_facts`` so the same validation applies.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from context.compaction.extractors import find_message_facts
from context.compaction.facts import dedupe
from context.compaction.guard import validate
from context.compaction.identifiers import DEFAULT_REGION
from context.compaction.rules import RULES, Rule
from context.compaction.summary import DEFAULT_WORD_CAP, SalienceWeights, summarize
from context.compaction.trigger import (
    DEFAULT_HIGH_WATER,
    DEFAULT_KEEP_RECENT,
    DEFAULT_LOW_WATER,
    plan_compaction,
    plan_final,
)
from context.compaction.types import (
    FACT_SCOPES,
    CompactionPlan,
    CompactionResult,
    ExtractedFact,
    SourceMessage,
    SummarySentence,
    SummaryState,
)
from context.errors import ContextInputError
from context.inputs import TRANSCRIPT_CHANNELS

__all__ = [
    "MASKED_KEYS",
    "TRANSCRIPT_PER_MESSAGE",
    "TRANSCRIPT_WORD_CAP",
    "EpisodeCompaction",
    "accept_facts",
    "advance",
    "compact_episode",
    "compact_offline",
    "is_transcript",
]

# Fact keys whose values are masked in summaries besides the built-in identifier shapes.
MASKED_KEYS: Final = frozenset({"order_id", "protocol"})
# The word cap of a call's summary: recall reaches a call's raw turns only where they match the
# message, and the summary stands for the rest, so it keeps more of what was said than a chat's.
TRANSCRIPT_WORD_CAP: Final = 500
# Sentences a call's summary keeps per utterance (a chat's keeps one): a spoken turn runs on
# and says several things, and what is asked later is often not its most salient sentence.
# Set on the LoCoMo dev split: 3 sentences within 500 words lifted evidence coverage 0.851 →
# 0.866 and answer in window 0.453 → 0.467 (1 within 500 words: no change; 3 within 300: worse,
# fewer utterances fit).
TRANSCRIPT_PER_MESSAGE: Final = 3


def is_transcript(messages: Sequence[SourceMessage]) -> bool:
    """Whether ``messages`` are a call's (a transcript channel, or transcript confidences)."""
    return bool(messages) and all(
        m.channel in TRANSCRIPT_CHANNELS or m.confidence is not None for m in messages
    )


def accept_facts(
    proposed: Iterable[ExtractedFact],
    compacted_ids: Collection[int],
    *,
    schema: Mapping[str, str] = FACT_SCOPES,
) -> tuple[tuple[ExtractedFact, ...], tuple[tuple[ExtractedFact, str], ...]]:
    """Validate proposed facts against the compacted range, then drop restatements.

    Accepted facts come back in message order; a key may repeat, its last value current.
    """
    accepted, refused = validate(proposed, compacted_ids, schema=schema)
    return dedupe(accepted), refused


def compact_offline(
    messages: Sequence[SourceMessage],
    previous_summary: str | None = None,
    previous_sentences: Sequence[SummarySentence] = (),
    *,
    word_cap: int = DEFAULT_WORD_CAP,
    transcript_word_cap: int = TRANSCRIPT_WORD_CAP,
    per_message: int = 1,
    transcript_per_message: int = TRANSCRIPT_PER_MESSAGE,
    region: str = DEFAULT_REGION,
    rules: Sequence[Rule] = RULES,
    weights: SalienceWeights = SalienceWeights(),  # noqa: B008 - frozen, shared safely
) -> CompactionResult:
    """Facts and summary of the compacted ``messages`` (oldest first).

    Every fact is sourced to one of ``messages``; superseded values stay in ``facts`` before
    their replacement so the caller can record the history (``facts.merge_facts``). The summary
    is capped at ``word_cap`` words and ``per_message`` sentences per message, or
    ``transcript_word_cap`` and ``transcript_per_message`` for a call (`is_transcript`).
    """
    ids = [message.id for message in messages]
    if any(after <= before for before, after in zip(ids, ids[1:], strict=False)):
        raise ContextInputError("unordered_messages", "compacted messages must be oldest first")
    found = [item for m in messages for item in find_message_facts(m, region=region, rules=rules)]
    accepted, refused = accept_facts([item.fact for item in found], frozenset(ids))
    kept = set(accepted)
    fact_spans: dict[int, list[tuple[int, int]]] = {}
    for item in found:
        if item.fact in kept:
            fact_spans.setdefault(item.fact.source_message_id, []).append((item.start, item.end))
    spoken = is_transcript(messages)
    text, sentences = summarize(
        messages,
        previous_sentences=previous_sentences,
        previous_summary=previous_summary,
        fact_spans=fact_spans,
        word_cap=transcript_word_cap if spoken else word_cap,
        per_message=transcript_per_message if spoken else per_message,
        mask_values=[(fact.value, fact.key) for fact in accepted if fact.key in MASKED_KEYS],
        region=region,
        weights=weights,
    )
    return CompactionResult(facts=accepted, summary=text, sentences=sentences, refused=refused)


def advance(state: SummaryState, plan: CompactionPlan, result: CompactionResult) -> SummaryState:
    """The episode's summary record after applying ``result`` of ``plan``."""
    if plan.new_pointer is None:
        return state
    if state.last_message_id is not None and plan.new_pointer <= state.last_message_id:
        raise ContextInputError(
            "stale_compaction",
            f"pointer {plan.new_pointer} does not move past {state.last_message_id}",
        )
    return SummaryState(result.summary, plan.new_pointer, result.sentences)


@dataclass(frozen=True, slots=True)
class EpisodeCompaction:
    """One compaction step: its plan, its result and the new summary state."""

    plan: CompactionPlan
    result: CompactionResult
    state: SummaryState


def compact_episode(
    state: SummaryState,
    unsummarized: Sequence[SourceMessage],
    *,
    closed: bool = False,
    high_water: int = DEFAULT_HIGH_WATER,
    low_water: int = DEFAULT_LOW_WATER,
    keep_recent: int = DEFAULT_KEEP_RECENT,
    block_tokens: int | None = None,
    word_cap: int = DEFAULT_WORD_CAP,
    region: str = DEFAULT_REGION,
) -> EpisodeCompaction | None:
    """Plan and run the offline compaction of an episode; None when nothing is due.

    ``unsummarized`` are the messages after ``state.last_message_id``, oldest first. A closed
    episode is compacted whole (its final summary) regardless of the marks.
    """
    if state.last_message_id is not None and any(
        message.id <= state.last_message_id for message in unsummarized
    ):
        raise ContextInputError(
            "summarized_message", f"messages up to {state.last_message_id} are already summarized"
        )
    if closed:
        plan = plan_final(unsummarized)
    else:
        plan = plan_compaction(
            unsummarized,
            high_water=high_water,
            low_water=low_water,
            keep_recent=keep_recent,
            block_tokens=block_tokens,
        )
    if plan is None:
        return None
    consumed = set(plan.compact_ids)
    result = compact_offline(
        [message for message in unsummarized if message.id in consumed],
        state.summary or None,
        state.sentences,
        word_cap=word_cap,
        region=region,
    )
    return EpisodeCompaction(plan, result, advance(state, plan, result))
