"""When to compact an episode and how much: a threshold with hysteresis.

A compaction starts only when the unsummarized tokens exceed the high-water mark, and then
consumes the oldest messages until what stays whole fits under the low-water mark. Right after a
compaction the episode is therefore at most ``low_water`` tokens, and it must grow by more than
``high_water − low_water`` before the next one: a conversation hovering around the threshold is
compacted once, not on every turn, and the summary (part of the cached prompt prefix) changes
only in blocks.

What always stays whole, whatever the marks say: the last ``keep_recent`` messages and the last
user and last assistant message. When those alone exceed the marks, the plan consumes what it
may and keeps them anyway (the window builder truncates oversized turns); if nothing may be
consumed there is no plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate
from typing import Final

from context.compaction.types import CompactionPlan, SourceMessage
from context.errors import ContextInputError

__all__ = [
    "DEFAULT_HIGH_WATER",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_LOW_WATER",
    "consumable_limit",
    "plan_compaction",
    "plan_final",
    "should_compact",
]

DEFAULT_HIGH_WATER: Final = 3000
DEFAULT_LOW_WATER: Final = 1500
DEFAULT_KEEP_RECENT: Final = 8


def _check_order(messages: Sequence[SourceMessage]) -> None:
    for before, after in zip(messages, messages[1:], strict=False):
        if after.id <= before.id:
            raise ContextInputError(
                "unordered_messages", f"message {after.id} follows {before.id}; oldest first"
            )


def _check_marks(high_water: int, low_water: int, keep_recent: int, block: int | None) -> None:
    if not 0 <= low_water < high_water:
        raise ContextInputError(
            "invalid_thresholds", f"need 0 <= low_water ({low_water}) < high_water ({high_water})"
        )
    if keep_recent < 0:
        raise ContextInputError("invalid_thresholds", f"keep_recent {keep_recent} < 0")
    if block is not None and block <= 0:
        raise ContextInputError("invalid_thresholds", f"block_tokens {block} <= 0")


def should_compact(unsummarized_tokens: int, *, high_water: int = DEFAULT_HIGH_WATER) -> bool:
    """The cheap check the pipeline makes after each turn before enqueueing a compaction."""
    return unsummarized_tokens > high_water


def consumable_limit(messages: Sequence[SourceMessage], keep_recent: int) -> int:
    """How many of the oldest ``messages`` a compaction may consume: never the last
    ``keep_recent`` ones, nor the last user or last assistant message (nor anything after them,
    since the summary covers a prefix)."""
    limit = max(0, len(messages) - keep_recent)
    for role in ("user", "assistant"):
        last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == role), None)
        if last is not None:
            limit = min(limit, last)
    return limit


def plan_compaction(
    unsummarized: Sequence[SourceMessage],
    *,
    high_water: int = DEFAULT_HIGH_WATER,
    low_water: int = DEFAULT_LOW_WATER,
    keep_recent: int = DEFAULT_KEEP_RECENT,
    block_tokens: int | None = None,
) -> CompactionPlan | None:
    """The compaction of ``unsummarized`` (the messages after the summary pointer, oldest first)
    or None when it is not due or nothing may be consumed.

    Consumes the shortest prefix that leaves at most ``low_water`` tokens whole, within
    ``consumable_limit``. With ``block_tokens`` the consumed tokens are rounded up to a multiple
    of it (coarser, rarer compactions; still within the limit).
    """
    _check_marks(high_water, low_water, keep_recent, block_tokens)
    _check_order(unsummarized)
    total = sum(message.tokens for message in unsummarized)
    if not should_compact(total, high_water=high_water):
        return None
    limit = consumable_limit(unsummarized, keep_recent)
    prefix = [0, *accumulate(message.tokens for message in unsummarized)]
    needed = total - low_water
    if block_tokens is not None:
        needed = math.ceil(needed / block_tokens) * block_tokens
    count = next((n for n in range(limit + 1) if prefix[n] >= needed), limit)
    if count == 0:
        return None
    ids = tuple(message.id for message in unsummarized)
    return CompactionPlan(compact_ids=ids[:count], keep_ids=ids[count:], new_pointer=ids[count - 1])


def plan_final(unsummarized: Sequence[SourceMessage]) -> CompactionPlan | None:
    """The final compaction of a closed episode: every unsummarized message; None if none."""
    _check_order(unsummarized)
    if not unsummarized:
        return None
    ids = tuple(message.id for message in unsummarized)
    return CompactionPlan(compact_ids=ids, keep_ids=(), new_pointer=ids[-1])
