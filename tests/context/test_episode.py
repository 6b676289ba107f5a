from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from context.budget import Budget
from context.episode import (
    MAX_LISTED_TURNS,
    Fitted,
    dropped_turns,
    fit_text,
    last_user_and_assistant,
    plan_episode,
)
from context.errors import BudgetError
from context.inputs import CurrentEpisode, Role, Turn
from context.tokens import TiktokenCounter, load_encoding

T0 = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def make_turns(counter: TiktokenCounter, roles: str, words: int = 10) -> tuple[Turn, ...]:
    out = []
    for i, letter in enumerate(roles):
        role: Role = "user" if letter == "u" else "assistant"
        text = f"turno {i} " + "palavra " * words
        out.append(
            Turn(f"t{i}", role, text, counter.count(text), "webchat", T0 + timedelta(minutes=i))
        )
    return tuple(out)


def current(counter: TiktokenCounter, text: str = "e agora?") -> Fitted:
    tokens = counter.count(text)
    return Fitted(text, tokens, truncated=False, original_tokens=tokens)


def test_short_text_is_untouched(counter: TiktokenCounter) -> None:
    fitted = fit_text("olá", None, Budget.default(), counter)
    assert fitted == Fitted(
        "olá", counter.count("olá"), truncated=False, original_tokens=counter.count("olá")
    )


def test_stored_count_is_trusted(counter: TiktokenCounter) -> None:
    assert fit_text("olá", 7, Budget.default(), counter).tokens == 7


def test_oversized_message_is_cut_to_the_target_with_a_marker(counter: TiktokenCounter) -> None:
    text = "início " + " ".join(f"item{i}" for i in range(3000)) + " fim"
    budget = Budget.default()
    fitted = fit_text(text, None, budget, counter)
    assert fitted.truncated
    assert fitted.content.startswith("início ")
    assert fitted.content.endswith(" fim")
    dropped = counter.count(text) - budget.truncated_message_target_tokens
    assert f"[… truncated {dropped} tokens …]" in fitted.content
    assert fitted.tokens == counter.count(fitted.content)
    assert fitted.tokens <= budget.truncated_message_target_tokens + 20
    assert fitted.original_tokens == counter.count(text)


def test_message_at_the_limit_is_kept_whole(counter: TiktokenCounter) -> None:
    budget = Budget.default()
    text = "a" + " a" * 1199
    assert counter.count(text) == budget.max_single_message_tokens
    assert not fit_text(text, None, budget, counter).truncated
    assert fit_text(text + " a", None, budget, counter).truncated


def test_character_cap_applies_before_counting(counter: TiktokenCounter) -> None:
    budget = Budget(
        max_input_chars=1000, max_single_message_tokens=5000, truncated_message_target_tokens=700
    )
    text = "a" * 600 + "b" * 1400
    fitted = fit_text(text, 99, budget, counter)
    assert fitted.truncated
    assert "[… truncated 1000 characters …]" in fitted.content
    assert fitted.content.startswith("a" * 600) and fitted.content.endswith("b" * 333)


def test_character_cap_and_token_cut_together(counter: TiktokenCounter) -> None:
    budget = Budget(max_input_chars=20_000)
    text = " ".join(f"w{i}" for i in range(10_000))
    fitted = fit_text(text, None, budget, counter)
    assert "tokens and " in fitted.content and f"{len(text) - 20_000} characters" in fitted.content


def test_last_user_and_assistant(counter: TiktokenCounter) -> None:
    assert last_user_and_assistant(make_turns(counter, "uauuu")) == (4, 1)
    assert last_user_and_assistant(make_turns(counter, "uuu")) == (2, None)
    assert last_user_and_assistant(()) == (None, None)


def test_everything_fits(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "uaua")
    episode = CurrentEpisode("e", "webchat", turns)
    plan = plan_episode(episode, current(counter), 10_000, Budget.default(), counter)
    kept = sorted(pick.index for pick in (*plan.mandatory, *plan.optional))
    assert kept == [0, 1, 2, 3]
    assert plan.used == sum(t.tokens + 4 for t in turns) + plan.current_cost


def test_middle_is_compressed_keeping_head_and_tail(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "ua" * 20)
    per_turn = turns[5].tokens + 4
    episode = CurrentEpisode("e", "webchat", turns)
    cur = current(counter)
    allowance = cur.tokens + 4 + 8 * per_turn + 2  # room for 8 turns
    plan = plan_episode(episode, cur, allowance, Budget.default(), counter)
    kept = sorted(pick.index for pick in (*plan.mandatory, *plan.optional))
    assert kept == [0, 1, 34, 35, 36, 37, 38, 39]
    assert plan.used <= allowance
    dropped = dropped_turns(turns, kept)
    assert [d.id for d in dropped] == [f"t{i}" for i in range(2, 34)]
    assert {d.reason for d in dropped} == {"compressed_middle"}


def test_mandatory_turns_survive_even_far_back(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "a" + "u" * 30)
    episode = CurrentEpisode("e", "webchat", turns)
    cur = current(counter)
    allowance = cur.tokens + 4 + 3 * (turns[5].tokens + 4)
    plan = plan_episode(episode, cur, allowance, Budget(head_turns=0), counter)
    kept = sorted(pick.index for pick in (*plan.mandatory, *plan.optional))
    assert kept == [0, 29, 30]


def test_tail_is_contiguous(counter: TiktokenCounter) -> None:
    small = make_turns(counter, "uaua", words=2)
    big_text = "grande " * 300
    big = Turn("big", "user", big_text, counter.count(big_text), "webchat", T0)
    turns = (*small[:2], big, *small[2:])
    episode = CurrentEpisode("e", "webchat", turns)
    plan = plan_episode(episode, current(counter), 100, Budget(head_turns=0), counter)
    kept = sorted(pick.index for pick in (*plan.mandatory, *plan.optional))
    # The big turn does not fit; older small turns are not rescued past it.
    assert kept == [3, 4]


def test_summary_is_charged_before_optional_turns(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "uaua")
    episode = CurrentEpisode("e", "webchat", turns, summary="resumo curto", summary_tokens=3)
    plan = plan_episode(episode, current(counter), 10_000, Budget.default(), counter)
    assert plan.summary_cost is not None and plan.summary_cost > 3


def test_mandatory_over_budget_is_an_error(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "ua")
    episode = CurrentEpisode("e", "webchat", turns)
    with pytest.raises(BudgetError) as caught:
        plan_episode(episode, current(counter), 20, Budget.default(), counter)
    assert caught.value.code == "mandatory_context_exceeds_budget"


def test_long_gaps_are_reported_as_ranges(counter: TiktokenCounter) -> None:
    turns = make_turns(counter, "ua" * 100, words=1)
    dropped = dropped_turns(turns, [0, 1, 150, 199])
    assert [(d.kind, d.id) for d in dropped] == [
        ("turn_range", "t2..t149"),
        ("turn_range", "t151..t198"),
    ]
    few = dropped_turns(turns, list(range(200 - MAX_LISTED_TURNS)) + [199])
    assert len(few) == MAX_LISTED_TURNS - 1 and few[0].kind == "turn"
