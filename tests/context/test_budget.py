from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.budget import SLICE_NAMES, Budget


def allocated(budget: Budget) -> int:
    sliced = sum(amount for _, amount in budget.slices)
    return sliced + budget.output_reserve + budget.protocol_margin


def test_default_is_the_8k_split() -> None:
    budget = Budget.default()
    assert budget.window == 8192
    assert dict(budget.slices) == {
        "instruction": 800,
        "state": 400,
        "facts": 1200,
        "knowledge": 600,
        "summaries": 1000,
        "current_episode": 3200,
    }
    assert budget.output_reserve == 800
    assert budget.protocol_margin == 192
    assert allocated(budget) == 8192
    assert budget.input_budget == 7200
    assert (budget.max_single_message_tokens, budget.truncated_message_target_tokens) == (1200, 700)
    assert budget.max_input_chars == 50_000


def test_slices_are_in_fill_order() -> None:
    assert tuple(name for name, _ in Budget.default().slices) == SLICE_NAMES


def test_for_window_8k_is_the_default() -> None:
    assert Budget.for_window(8192) == Budget.default()


def test_for_window_scales_proportionally() -> None:
    budget = Budget.for_window(16384)
    assert dict(budget.slices)["facts"] == 2400
    assert budget.output_reserve == 1600
    assert budget.protocol_margin == 384
    assert budget.max_single_message_tokens == 2400
    assert allocated(budget) == 16384


def test_for_window_explicit_values_win() -> None:
    budget = Budget.for_window(8192, output_reserve=1000, protocol_margin=100, facts=2000)
    assert budget.output_reserve == 1000
    assert budget.protocol_margin == 100
    assert budget.facts == 2000
    assert allocated(budget) == 8192
    # The others share what is left in the default proportions.
    rest = 8192 - 1000 - 100 - 2000
    assert budget.instruction == rest * 800 // 6000


def test_for_window_rejects_impossible_overrides() -> None:
    with pytest.raises(ValueError, match="explicit slices"):
        Budget.for_window(4096, facts=5000)
    with pytest.raises(ValueError, match="exceed the window"):
        Budget.for_window(1000, output_reserve=900, protocol_margin=200)
    with pytest.raises(ValueError, match="positive"):
        Budget.for_window(0)


def test_constructor_validates_the_sum() -> None:
    with pytest.raises(ValueError, match=r"8193 exceed the window \(8192\)"):
        Budget(protocol_margin=193)


def test_constructor_rejects_negative_values() -> None:
    with pytest.raises(ValueError, match="facts must be a non-negative int"):
        Budget(facts=-1)


def test_truncation_target_must_be_below_the_limit() -> None:
    with pytest.raises(ValueError, match="truncated_message_target_tokens"):
        Budget(max_single_message_tokens=700, truncated_message_target_tokens=700)


def test_slack_is_allowed_but_never_counts_as_input() -> None:
    budget = Budget(facts=100)
    assert budget.input_budget == 7200
    assert allocated(budget) == 8192 - 1100


def test_budget_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Budget.default().window = 1  # type: ignore[misc]


def test_unknown_slice_name() -> None:
    with pytest.raises(KeyError):
        Budget.default().slice_budget("output")


@settings(max_examples=200, deadline=None)
@given(window=st.integers(min_value=1, max_value=2_000_000))
def test_scaled_budgets_always_add_up_to_the_window(window: int) -> None:
    budget = Budget.for_window(window)
    assert allocated(budget) == window
    assert budget.input_budget == sum(amount for _, amount in budget.slices)
    assert budget.truncated_message_target_tokens < budget.max_single_message_tokens


@settings(max_examples=150, deadline=None)
@given(
    window=st.integers(min_value=2048, max_value=200_000),
    reserve=st.integers(min_value=0, max_value=1000),
    facts=st.one_of(st.none(), st.integers(min_value=0, max_value=1000)),
)
def test_overrides_never_break_the_window(window: int, reserve: int, facts: int | None) -> None:
    budget = Budget.for_window(window, output_reserve=reserve, facts=facts)
    assert allocated(budget) == window
    if facts is not None:
        assert budget.facts == facts
