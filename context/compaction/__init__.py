"""Pure compaction rules: when to compact an episode, what facts and summary to keep.

No I/O: the gateway loads the unsummarized messages, calls these functions off the hot path and
stores the outcome (facts with their sources and supersession, the summary record, a trace).
Typical use in a worker::

    step = compact_episode(state, unsummarized)               # None: nothing due
    if step is not None:
        changes = merge_facts(current_stored_facts, step.result.facts)
        ... write changes.added / changes.superseded, step.state, a trace ...

Pieces: ``plan_compaction``/``plan_final`` (hysteresis trigger), ``extract_facts`` (rule table
``RULES`` in pt and en), ``validate``/``is_instruction_like`` (source, schema, scope and
injection guard), ``summarize`` (extractive, capped, sourced), ``compact_offline``.
"""

from __future__ import annotations

from context.compaction.compactor import (
    MASKED_KEYS,
    EpisodeCompaction,
    accept_facts,
    advance,
    compact_episode,
    compact_offline,
)
from context.compaction.extractors import Found, extract_facts, find_facts, split_sentences
from context.compaction.facts import (
    FactChanges,
    current_facts,
    dedupe,
    merge_facts,
    same_value,
    supersessions,
    to_fact_item,
)
from context.compaction.guard import (
    INSTRUCTION_PATTERNS,
    MAX_VALUE_CHARS,
    REFUSAL_REASONS,
    instruction_match,
    is_instruction_like,
    validate,
)
from context.compaction.identifiers import (
    DEFAULT_REGION,
    is_cnpj,
    is_cpf,
    mask_identifiers,
    normalize_phone,
)
from context.compaction.rules import CUES, RULES, Rule
from context.compaction.summary import DEFAULT_WORD_CAP, SalienceWeights, summarize
from context.compaction.trigger import (
    DEFAULT_HIGH_WATER,
    DEFAULT_KEEP_RECENT,
    DEFAULT_LOW_WATER,
    consumable_limit,
    plan_compaction,
    plan_final,
    should_compact,
)
from context.compaction.types import (
    FACT_SCOPES,
    MULTI_VALUED_KEYS,
    RULE_KEYS,
    CompactionPlan,
    CompactionResult,
    ExtractedFact,
    SourceMessage,
    SummarySentence,
    SummaryState,
)

__all__ = [
    "CUES",
    "DEFAULT_HIGH_WATER",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_LOW_WATER",
    "DEFAULT_REGION",
    "DEFAULT_WORD_CAP",
    "FACT_SCOPES",
    "INSTRUCTION_PATTERNS",
    "MASKED_KEYS",
    "MAX_VALUE_CHARS",
    "MULTI_VALUED_KEYS",
    "REFUSAL_REASONS",
    "RULES",
    "RULE_KEYS",
    "CompactionPlan",
    "CompactionResult",
    "EpisodeCompaction",
    "ExtractedFact",
    "FactChanges",
    "Found",
    "Rule",
    "SalienceWeights",
    "SourceMessage",
    "SummarySentence",
    "SummaryState",
    "accept_facts",
    "advance",
    "compact_episode",
    "compact_offline",
    "consumable_limit",
    "current_facts",
    "dedupe",
    "extract_facts",
    "find_facts",
    "instruction_match",
    "is_cnpj",
    "is_cpf",
    "is_instruction_like",
    "mask_identifiers",
    "merge_facts",
    "normalize_phone",
    "plan_compaction",
    "plan_final",
    "same_value",
    "should_compact",
    "split_sentences",
    "summarize",
    "supersessions",
    "to_fact_item",
    "validate",
]
