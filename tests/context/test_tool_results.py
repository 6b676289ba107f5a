"""The room a turn's tool results share, and the budget that keeps it off the first input."""

from __future__ import annotations

import pytest

from context.budget import Budget
from context.tokens import TiktokenCounter, load_encoding
from context.tool_results import RESULTS_CUT_MARK, ResultRoom


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def test_results_within_the_room_go_whole(counter: TiktokenCounter) -> None:
    room = ResultRoom(100)
    text, room = room.fit("o pedido saiu para entrega", counter)
    assert text == "o pedido saiu para entrega"
    assert room.used == counter.count(text) and room.results == 1 and room.cut == 0


def test_a_result_past_the_room_is_cut_visibly_and_counted(counter: TiktokenCounter) -> None:
    long = " ".join(f"item {n}" for n in range(200))
    room = ResultRoom(60)
    text, room = room.fit(long, counter)
    assert text.endswith(RESULTS_CUT_MARK) and text.startswith("item 0 item 1")
    assert counter.count(text) <= 60 and room.used <= 60
    assert room.cut == 1 and room.cut_tokens == counter.count(long) - counter.count(
        text.removesuffix(RESULTS_CUT_MARK)
    )
    # Nothing left: a later result is only the mark.
    later, room = room.fit("mais um resultado", counter)
    assert later == RESULTS_CUT_MARK and room.cut == 2 and room.results == 2


def test_the_room_comes_off_the_input_before_the_slices_share_it() -> None:
    plain = Budget.for_window(8192)
    acting = Budget.for_window(8192, tool_results=1200)
    assert acting.input_budget == plain.input_budget - 1200
    assert sum(b for _, b in acting.slices) == sum(b for _, b in plain.slices) - 1200
    with pytest.raises(ValueError, match="tool results"):
        Budget(tool_results=1)  # the default split fills the window already
