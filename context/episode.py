"""The current-episode slice: the current message, the episode summary and its turns.

Charging order inside the slice: the current message and the last user and last assistant
turns (mandatory), the episode summary, the first ``head_turns`` turns (where the customer said
what they want), then turns walking back from the end until one does not fit. What lies between
the head and the tail is the compressed middle. The walk stops at the first turn that does not
fit, so the tail is a contiguous run and the work done is bounded by the window, not the history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from context.budget import Budget
from context.errors import BudgetError
from context.inputs import CurrentEpisode, Turn
from context.render import BLOCK_SEPARATOR, EPISODE_SUMMARY_HEADER, truncation_marker
from context.report import DroppedItem
from context.tokens import TokenCounter

__all__ = [
    "MAX_LISTED_TURNS",
    "EpisodePlan",
    "Fitted",
    "TurnPick",
    "dropped_turns",
    "episode_demand",
    "fit_text",
    "last_user_and_assistant",
    "plan_episode",
    "summary_cost",
]

# Above this many dropped middle turns the report names ranges instead of every id.
MAX_LISTED_TURNS: Final = 64


@dataclass(frozen=True, slots=True)
class Fitted:
    """Message text as it enters the window; ``tokens`` excludes the per-message overhead.

    ``original_tokens`` is the count before the token cut (after the character cap, if any).
    """

    content: str
    tokens: int
    truncated: bool
    original_tokens: int


@dataclass(frozen=True, slots=True)
class TurnPick:
    """A turn kept in the window; ``cost`` includes the per-message overhead."""

    index: int
    fitted: Fitted
    cost: int


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    """The selection of the current-episode slice.

    ``optional`` lists the kept non-mandatory turns in selection order (head first, then tail from
    the end), so the last entry is the first to give up if the window must shrink.
    """

    current: Fitted
    current_cost: int
    mandatory: tuple[TurnPick, ...]
    summary_cost: int | None
    optional: tuple[TurnPick, ...]

    @property
    def used(self) -> int:
        optional = sum(pick.cost for pick in self.optional)
        mandatory = sum(pick.cost for pick in self.mandatory)
        return self.current_cost + mandatory + (self.summary_cost or 0) + optional


def fit_text(text: str, known_tokens: int | None, budget: Budget, counter: TokenCounter) -> Fitted:
    """Apply the input caps: first ``max_input_chars`` (before any counting, so a huge paste is
    never tokenized whole), then cut a message above ``max_single_message_tokens`` to
    ``truncated_message_target_tokens``, keeping its start and end around a visible marker."""
    dropped_chars = 0
    head_chars = tail_chars = ""
    if len(text) > budget.max_input_chars:
        keep_head = budget.max_input_chars * 2 // 3
        keep_tail = budget.max_input_chars - keep_head
        dropped_chars = len(text) - budget.max_input_chars
        head_chars, tail_chars = text[:keep_head], text[len(text) - keep_tail :]
        text = f"{head_chars}\n{tail_chars}"
        known_tokens = None
    tokens = counter.count(text) if known_tokens is None else known_tokens
    if tokens <= budget.max_single_message_tokens:
        if not dropped_chars:
            return Fitted(text, tokens, truncated=False, original_tokens=tokens)
        content = f"{head_chars}\n{truncation_marker(0, dropped_chars)}\n{tail_chars}"
        return Fitted(content, counter.count(content), truncated=True, original_tokens=tokens)
    target = budget.truncated_message_target_tokens
    head_tokens = (2 * target + 2) // 3
    head, tail, dropped = counter.truncate(text, head_tokens, target - head_tokens)
    pieces = [head, truncation_marker(dropped, dropped_chars)]
    if tail:
        pieces.append(tail)
    content = "\n".join(pieces)
    return Fitted(content, counter.count(content), truncated=True, original_tokens=tokens)


def last_user_and_assistant(turns: Sequence[Turn]) -> tuple[int | None, int | None]:
    """Indices of the last user turn and the last assistant turn (walking back from the end)."""
    user: int | None = None
    assistant: int | None = None
    for index in range(len(turns) - 1, -1, -1):
        role = turns[index].role
        if role == "user" and user is None:
            user = index
        elif role == "assistant" and assistant is None:
            assistant = index
        if user is not None and assistant is not None:
            break
    return user, assistant


def _pick(turns: Sequence[Turn], index: int, budget: Budget, counter: TokenCounter) -> TurnPick:
    turn = turns[index]
    fitted = fit_text(turn.text, turn.tokens, budget, counter)
    return TurnPick(index, fitted, counter.message_overhead + fitted.tokens)


def summary_cost(episode: CurrentEpisode, counter: TokenCounter) -> int | None:
    """Cost of the episode summary block, or None when the episode has no summary."""
    if episode.summary is None:
        return None
    tokens = episode.summary_tokens
    if tokens is None:
        tokens = counter.count(episode.summary)
    return counter.count(f"{BLOCK_SEPARATOR}{EPISODE_SUMMARY_HEADER}\n") + tokens


def episode_demand(
    episode: CurrentEpisode, message: str, budget: Budget, counter: TokenCounter
) -> int:
    """What the current episode slice would use with nothing cut: the current message, every
    turn (each after the single-message cap) and the episode summary."""
    current = fit_text(message, None, budget, counter)
    turns = sum(_pick(episode.turns, i, budget, counter).cost for i in range(len(episode.turns)))
    summary = summary_cost(episode, counter) or 0
    return counter.message_overhead + current.tokens + turns + summary


def plan_episode(
    episode: CurrentEpisode,
    current: Fitted,
    allowance: int,
    budget: Budget,
    counter: TokenCounter,
) -> EpisodePlan:
    """Select the slice's content within ``allowance`` (its budget plus surplus received).

    Raises ``BudgetError("mandatory_context_exceeds_budget")`` when the current message and the
    last user and assistant turns do not fit: cutting them silently would answer out of context.
    """
    turns = episode.turns
    current_cost = counter.message_overhead + current.tokens
    last_user, last_assistant = last_user_and_assistant(turns)
    mandatory_indices = sorted(i for i in (last_user, last_assistant) if i is not None)
    mandatory = tuple(_pick(turns, i, budget, counter) for i in mandatory_indices)
    used = current_cost + sum(pick.cost for pick in mandatory)
    if used > allowance:
        raise BudgetError(
            "mandatory_context_exceeds_budget",
            f"the current message and the last user/assistant turns need {used} tokens; "
            f"the current episode slice has {allowance}",
        )
    cost = summary_cost(episode, counter)
    if cost is not None and used + cost <= allowance:
        used += cost
    else:
        cost = None

    taken = set(mandatory_indices)
    optional: list[TurnPick] = []
    head_end = min(budget.head_turns, len(turns))
    for index in range(head_end):
        if index in taken:
            continue
        pick = _pick(turns, index, budget, counter)
        if used + pick.cost > allowance:
            break
        optional.append(pick)
        taken.add(index)
        used += pick.cost
    for index in range(len(turns) - 1, head_end - 1, -1):
        if index in taken:
            continue
        pick = _pick(turns, index, budget, counter)
        if used + pick.cost > allowance:
            break  # a contiguous tail: never skip a turn to rescue an older one
        optional.append(pick)
        used += pick.cost
    return EpisodePlan(current, current_cost, mandatory, cost, tuple(optional))


def dropped_turns(turns: Sequence[Turn], kept: Sequence[int]) -> tuple[DroppedItem, ...]:
    """Report the turns not kept, as gaps between kept indices (O(kept), not O(history)).

    Each id is listed while at most ``MAX_LISTED_TURNS`` turns were dropped; above that every gap
    becomes one ``turn_range`` entry ``"first_id..last_id"``.
    """
    bounds = sorted(set(kept))
    gaps: list[tuple[int, int]] = []
    previous = -1
    for index in [*bounds, len(turns)]:
        if index - previous > 1:
            gaps.append((previous + 1, index - 1))
        previous = index
    total = sum(last - first + 1 for first, last in gaps)
    if total <= MAX_LISTED_TURNS:
        return tuple(
            DroppedItem("turn", turns[i].id, "compressed_middle")
            for first, last in gaps
            for i in range(first, last + 1)
        )
    return tuple(
        DroppedItem("turn_range", f"{turns[first].id}..{turns[last].id}", "compressed_middle")
        for first, last in gaps
    )
