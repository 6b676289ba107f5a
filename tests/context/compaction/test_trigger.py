from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.compaction import (
    CompactionPlan,
    SourceMessage,
    consumable_limit,
    plan_compaction,
    plan_final,
    should_compact,
)
from context.errors import ContextInputError
from context.inputs import Role
from tests.support.conversations import message

PROPERTY = settings(max_examples=300, deadline=None)


def history(
    tokens: Sequence[int], roles: Sequence[str] | None = None, first_id: int = 1
) -> list[SourceMessage]:
    roles = roles or ["user" if i % 2 == 0 else "assistant" for i in range(len(tokens))]
    return [
        message(first_id + i, role, f"m{i}", tokens=count)
        for i, (count, role) in enumerate(zip(tokens, roles, strict=True))
    ]


def kept_tokens(messages: Sequence[SourceMessage], plan: CompactionPlan) -> int:
    keep = set(plan.keep_ids)
    return sum(m.tokens for m in messages if m.id in keep)


def last_of(messages: Sequence[SourceMessage], role: str) -> int | None:
    return next((m.id for m in reversed(messages) if m.role == role), None)


def test_no_plan_at_or_below_the_high_water_mark() -> None:
    assert plan_compaction(history([100] * 30)) is None  # exactly 3,000
    assert not should_compact(3000) and should_compact(3001)


def test_compacts_down_to_the_low_water_mark_keeping_recent_turns() -> None:
    messages = history([100] * 31)
    plan = plan_compaction(messages)
    assert plan is not None
    assert plan.compact_ids == tuple(range(1, 17))
    assert plan.keep_ids == tuple(range(17, 32))
    assert plan.new_pointer == 16
    assert kept_tokens(messages, plan) == 1500


def test_keeps_at_least_the_last_eight_turns_even_above_the_low_water_mark() -> None:
    messages = history([400] * 10)
    plan = plan_compaction(messages)
    assert plan is not None and plan.keep_ids == tuple(range(3, 11))
    assert kept_tokens(messages, plan) == 3200


def test_never_consumes_the_last_user_or_assistant_message() -> None:
    roles = ["assistant"] + ["user"] * 19
    messages = history([200] * 20, roles, first_id=1)
    plan = plan_compaction(messages, keep_recent=0)
    assert plan is None  # the only assistant message is the first: nothing may go
    roles = ["user", "assistant"] * 5 + ["user"] * 10
    messages = history([200] * 20, roles)
    plan = plan_compaction(messages, keep_recent=0)
    assert plan is not None and plan.keep_ids[0] == 10  # the last assistant message


def test_no_plan_when_the_protected_turns_alone_exceed_the_mark() -> None:
    assert plan_compaction(history([1000] * 8)) is None
    assert consumable_limit(history([1000] * 8), 8) == 0


def test_block_tokens_round_the_consumed_amount_up() -> None:
    messages = history([100] * 31)
    plan = plan_compaction(messages, block_tokens=1000)
    assert plan is not None and len(plan.compact_ids) == 20  # 1,600 needed → 2,000 consumed
    capped = plan_compaction(history([100] * 31), block_tokens=10_000)
    assert capped is not None and len(capped.keep_ids) == 8


def test_final_plan_takes_everything() -> None:
    messages = history([10, 20, 30])
    assert plan_final(messages) == CompactionPlan((1, 2, 3), (), 3)
    assert plan_final([]) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(high_water=100, low_water=100),
        dict(low_water=-1),
        dict(keep_recent=-1),
        dict(block_tokens=0),
    ],
)
def test_invalid_thresholds_are_refused(kwargs: dict[str, int]) -> None:
    with pytest.raises(ContextInputError):
        plan_compaction(history([10]), **kwargs)


def test_messages_must_be_oldest_first() -> None:
    messages = history([2000, 2000])
    with pytest.raises(ContextInputError):
        plan_compaction(list(reversed(messages)))


def run(turn_tokens: Sequence[int], *, high: int = 3000, low: int = 1500) -> list[int]:
    """Simulate an episode turn by turn; return the turns at which a compaction ran."""
    unsummarized: list[SourceMessage] = []
    compactions: list[int] = []
    for turn, count in enumerate(turn_tokens):
        role: Role = "user" if turn % 2 == 0 else "assistant"
        unsummarized.append(message(turn + 1, role, "t", tokens=count))
        plan = plan_compaction(unsummarized, high_water=high, low_water=low)
        if plan is not None:
            compactions.append(turn)
            keep = set(plan.keep_ids)
            unsummarized = [m for m in unsummarized if m.id in keep]
    return compactions


def test_hovering_around_the_threshold_compacts_once_not_every_turn() -> None:
    # Turns of 100 tokens: the episode crosses 3,000 at turn 30 and then hovers above it.
    turns = [100] * 40
    assert run(turns) == [30]
    # Without a gap between the marks the same conversation compacts every other turn, and the
    # summary (part of the cached prefix) changes each time.
    assert run(turns, low=2999) == [30, 32, 34, 36, 38]


@PROPERTY
@given(
    tokens=st.lists(st.integers(0, 800), min_size=0, max_size=60),
    roles=st.lists(st.sampled_from(["user", "assistant"]), min_size=60, max_size=60),
    high=st.integers(200, 5000),
    gap=st.integers(1, 4000),
    keep_recent=st.integers(0, 12),
    block=st.one_of(st.none(), st.integers(1, 2000)),
)
def test_plan_invariants(
    tokens: list[int],
    roles: list[str],
    high: int,
    gap: int,
    keep_recent: int,
    block: int | None,
) -> None:
    low = max(0, high - gap)
    messages = history(tokens, roles[: len(tokens)])
    plan = plan_compaction(
        messages, high_water=high, low_water=low, keep_recent=keep_recent, block_tokens=block
    )
    total = sum(tokens)
    limit = consumable_limit(messages, keep_recent)
    if total <= high or limit == 0:
        assert plan is None
        return
    assert plan is not None
    ids = tuple(m.id for m in messages)
    count = len(plan.compact_ids)
    # A prefix is consumed, the rest kept, the pointer at the last consumed message.
    assert plan.compact_ids + plan.keep_ids == ids
    assert 1 <= count <= limit and plan.new_pointer == ids[count - 1]
    # What always stays whole.
    assert len(plan.keep_ids) >= min(keep_recent, len(ids))
    for role in ("user", "assistant"):
        last = last_of(messages, role)
        assert last is None or last in plan.keep_ids
    kept = kept_tokens(messages, plan)
    consumed = total - kept
    if count < limit:
        # Under the low-water mark (and at a block boundary when blocks are set)...
        assert kept <= low
        if block is not None:
            assert consumed >= -(-(total - low) // block) * block
        # ...and the shortest such prefix.
        shorter = total - kept - messages[count - 1].tokens
        needed = total - low if block is None else -(-(total - low) // block) * block
        assert shorter < needed
    if kept <= low:
        # Hysteresis: one more turn smaller than the gap never triggers again.
        keep = set(plan.keep_ids)
        rest = [m for m in messages if m.id in keep]
        nxt = message(ids[-1] + 1, "user", "next", tokens=high - low - 1)
        assert (
            plan_compaction(
                rest + [nxt],
                high_water=high,
                low_water=low,
                keep_recent=keep_recent,
                block_tokens=block,
            )
            is None
        )


@PROPERTY
@given(st.lists(st.integers(1, 300), min_size=1, max_size=200))
def test_simulated_episodes_never_compact_on_consecutive_turns_when_turns_are_small(
    tokens: list[int],
) -> None:
    # Every turn is under high − low = 1,500, so two compactions need at least one turn between.
    compactions = run(tokens)
    assert all(b - a >= 2 for a, b in zip(compactions, compactions[1:], strict=False))
