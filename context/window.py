"""``build_window``: assemble the model's messages under the budget and report how.

Fill rules:

* Slices fill in order — instruction, state, facts, knowledge, summaries, current episode. Each
  may use its own budget plus the surplus the slice before it ceded, and cedes what it leaves;
  none takes from an earlier slice. Whatever the last slice leaves is then offered back, in
  slice order, to the state extras, facts, knowledge chunks and summaries that did not fit (the
  second pass).
* Knowledge chunks enter only when relevant to the message (`context.knowledge`); with none,
  the knowledge slice cedes its whole allowance forward.
* The fixed part (instruction + anchored campaign messages) never shrinks: if it exceeds its
  slice the build fails with ``fixed_context_exceeds_budget``. The same holds for the state core,
  the current message and the last user/assistant turns (``mandatory_context_exceeds_budget``);
  oversized messages are cut with a visible marker first, so this only happens on tiny budgets.
* Selection uses additive per-line estimates; the rendered window is then counted as a whole and,
  should tokenization across line boundaries push it over the input budget, the most recently
  chosen optional members are given back until it fits. The invariant
  ``estimated_tokens <= input_budget`` therefore holds for every window returned.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from context.budget import Budget
from context.episode import EpisodePlan, TurnPick, dropped_turns, fit_text, plan_episode
from context.errors import BudgetError, ContextInputError, ScopeViolation
from context.fill import Ledger, Pick, Pool
from context.inputs import (
    TRANSCRIPT_CHANNELS,
    ContextRequest,
    FactItem,
    KnowledgeItem,
    SummaryItem,
)
from context.knowledge import (
    KNOWLEDGE_HEADER,
    in_window_order,
    knowledge_line,
    knowledge_refs,
    rank_knowledge,
)
from context.relevance import rank_facts, rank_summaries, subject_terms
from context.render import (
    BLOCK_SEPARATOR,
    EPISODE_SUMMARY_HEADER,
    FACTS_HEADER,
    STATE_HEADER,
    SUMMARIES_HEADER,
    StateLines,
    block,
    fact_line,
    fact_line_without_value,
    fixed_text,
    state_lines,
    summary_entry,
    summary_tag,
)
from context.report import BudgetReport, ChatMessage, DroppedItem, SliceReport, Window
from context.tokens import TokenCounter

__all__ = ["build_window"]


def build_window(request: ContextRequest, budget: Budget, counter: TokenCounter) -> Window:
    """Build the messages for one model call and its ``BudgetReport``.

    Pure and deterministic: identical inputs give byte-identical messages. Raises
    ``BudgetError`` (see the module docstring), ``ScopeViolation`` for a fact outside the allowed
    scopes and ``ContextInputError`` for inconsistent input (a turn from another channel, a state
    for another channel, a summary of the current episode).
    """
    _validate(request)
    episode = request.episode
    ledgers = {name: Ledger(name, amount) for name, amount in budget.slices}
    separator = counter.count(BLOCK_SEPARATOR)
    picks: list[Pick] = []

    fixed = fixed_text(request.instruction, request.anchored)
    instruction = ledgers["instruction"]
    instruction.used = counter.count(fixed) + counter.message_overhead + counter.reply_primer
    if instruction.used > instruction.budget:
        raise BudgetError(
            "fixed_context_exceeds_budget",
            f"instruction and anchored messages need {instruction.used} tokens; "
            f"the instruction slice has {instruction.budget}",
        )

    state = ledgers["state"]
    state.received = instruction.close_first_pass()
    lines = state_lines(request.state, transcript=episode.channel in TRANSCRIPT_CHANNELS)
    state.used = separator + counter.count(block(STATE_HEADER, lines.core))
    if state.used > state.allowance:
        raise BudgetError(
            "mandatory_context_exceeds_budget",
            f"the operational state needs {state.used} tokens; its slice has {state.allowance}",
        )
    # What any prompt would carry, the raw history's too: the savings compare like with like.
    fixed_cost = instruction.used + state.used
    extras = Pool(state, "state", 0, tuple(1 + counter.count(line) for _, line in lines.extra))
    extras.fill(state.allowance - state.used, picks, second_pass=False)

    message = fit_text(request.message, None, budget, counter)
    # The subject ranks facts and summaries only: without either, its terms go unused.
    ranked = request.facts or request.summaries
    subject = subject_terms(message.content, episode.turns, request.subject_tags) if ranked else ()
    facts = rank_facts(request.facts, subject, request.subject_tags)
    ledgers["facts"].received = state.close_first_pass()
    fact_pool = Pool(
        ledgers["facts"],
        "fact",
        separator + counter.count(FACTS_HEADER),
        tuple(1 + _fact_cost(fact, counter) for fact in facts),
    )
    fact_pool.fill(ledgers["facts"].allowance, picks, second_pass=False)

    # A knowledge slice of 0 turns the knowledge off, surplus or not.
    wanted = budget.slice_budget("knowledge") > 0
    knowledge = (
        rank_knowledge(
            message.content,
            request.knowledge,
            index=request.knowledge_index,
            similarities=request.knowledge_similarities,
        )
        if wanted
        else ()
    )
    ledgers["knowledge"].received = ledgers["facts"].close_first_pass()
    # Costed with the largest number a line may get: numbering follows the final choice.
    knowledge_pool = Pool(
        ledgers["knowledge"],
        "knowledge",
        separator + counter.count(KNOWLEDGE_HEADER),
        tuple(1 + counter.count(knowledge_line(len(knowledge), item)) for item in knowledge),
    )
    knowledge_pool.fill(ledgers["knowledge"].allowance, picks, second_pass=False)

    summaries = rank_summaries(request.summaries, subject)
    ledgers["summaries"].received = ledgers["knowledge"].close_first_pass()
    summary_pool = Pool(
        ledgers["summaries"],
        "summary",
        separator + counter.count(SUMMARIES_HEADER),
        tuple(_summary_cost(summary, counter) for summary in summaries),
    )
    summary_pool.fill(ledgers["summaries"].allowance, picks, second_pass=False)

    current = ledgers["current_episode"]
    current.received = ledgers["summaries"].close_first_pass()
    plan = plan_episode(episode, message, current.allowance, budget, counter)
    current.used = plan.used
    if plan.summary_cost is not None:
        picks.append(Pick("episode_summary", 0, plan.summary_cost))
    picks.extend(Pick("turn", pick.index, pick.cost) for pick in plan.optional)

    leftover = current.close_first_pass()
    for pool in (extras, fact_pool, knowledge_pool, summary_pool):
        leftover -= pool.fill(leftover, picks, second_pass=True)

    selection = _Selection(
        request,
        fixed,
        lines,
        facts,
        knowledge,
        summaries,
        plan,
        extras,
        fact_pool,
        knowledge_pool,
        summary_pool,
        current,
        picks,
        turns={pick.index: pick for pick in (*plan.mandatory, *plan.optional)},
        with_summary=plan.summary_cost is not None,
    )
    while True:
        messages = selection.messages()
        estimated = _estimate(messages, selection.turns, counter)
        overflow = estimated - budget.input_budget
        if overflow <= 0:
            break
        if not picks:
            raise BudgetError(
                "mandatory_context_exceeds_budget",
                f"the mandatory context needs {estimated} tokens; "
                f"the input budget is {budget.input_budget}",
            )
        selection.give_back(overflow)

    full = fixed_cost + _full_history(request, message.original_tokens)
    report = BudgetReport(
        window=budget.window,
        output_reserve=budget.output_reserve,
        protocol_margin=budget.protocol_margin,
        input_budget=budget.input_budget,
        estimated_tokens=estimated,
        full_history_tokens=full,
        savings=max(0.0, round(1.0 - estimated / full, 4)) if full > 0 else 0.0,
        slices=(
            *(ledgers[name].freeze() for name, _ in budget.slices),
            SliceReport("output_reserve", budget.output_reserve, 0),
        ),
        dropped=selection.dropped(),
        prefix_sha256=hashlib.sha256(messages[0].content.encode("utf-8")).hexdigest(),
    )
    return Window(
        messages=messages, report=report, knowledge=knowledge_refs(selection.knowledge_lines())
    )


@dataclass(slots=True)
class _Selection:
    """What the window holds after the fill; renders it and can shrink it."""

    request: ContextRequest
    fixed: str
    lines: StateLines
    facts: tuple[FactItem, ...]  # in fill priority; pools refer to them by index
    knowledge: tuple[KnowledgeItem, ...]
    summaries: tuple[SummaryItem, ...]
    plan: EpisodePlan
    extras: Pool
    fact_pool: Pool
    knowledge_pool: Pool
    summary_pool: Pool
    current: Ledger
    picks: list[Pick]
    turns: dict[int, TurnPick]  # kept turns by index: mandatory and optional
    with_summary: bool

    def give_back(self, overflow: int) -> None:
        """Undo the newest picks until their estimated cost covers ``overflow``."""
        pools = {
            "state": self.extras,
            "fact": self.fact_pool,
            "knowledge": self.knowledge_pool,
            "summary": self.summary_pool,
        }
        freed = 0
        while self.picks and freed < overflow:
            pick = self.picks.pop()
            freed += pick.cost
            if pick.kind == "turn":
                del self.turns[pick.ref]
                self.current.give_back(pick)
            elif pick.kind == "episode_summary":
                self.with_summary = False
                self.current.give_back(pick)
            else:
                pools[pick.kind].give_back(pick)

    def system_text(self) -> str:
        """Blocks in fixed order, members in canonical order (never in relevance order)."""
        blocks = [self.fixed] if self.fixed else []
        extra = [self.lines.extra[ref][1] for ref in sorted(self.extras.chosen)]
        blocks.append(block(STATE_HEADER, (*self.lines.core, *extra)))
        facts = sorted(
            (self.facts[ref] for ref in self.fact_pool.chosen),
            key=lambda f: (not f.pinned, not f.is_rule, f.key, f.id, f.value),
        )
        if facts:
            blocks.append(block(FACTS_HEADER, (fact_line(fact) for fact in facts)))
        knowledge = self.knowledge_lines()
        if knowledge:
            lines = (knowledge_line(n, item) for n, item in enumerate(knowledge, start=1))
            blocks.append(block(KNOWLEDGE_HEADER, lines))
        summaries = sorted(
            (self.summaries[ref] for ref in self.summary_pool.chosen),
            key=lambda s: (s.started_at, s.ended_at, s.id, s.text),
        )
        if summaries:
            blocks.append(block(SUMMARIES_HEADER, (summary_entry(s) for s in summaries)))
        episode_summary = self.request.episode.summary
        if self.with_summary and episode_summary is not None:
            blocks.append(block(EPISODE_SUMMARY_HEADER, (episode_summary,)))
        return BLOCK_SEPARATOR.join(blocks)

    def knowledge_lines(self) -> tuple[KnowledgeItem, ...]:
        """The chosen knowledge chunks in the order the window numbers them."""
        return in_window_order(self.knowledge[ref] for ref in self.knowledge_pool.chosen)

    def messages(self) -> tuple[ChatMessage, ...]:
        """One system message, the kept turns in order, the current message last."""
        source = self.request.episode.turns
        turns = self.turns
        history = (
            ChatMessage(source[index].role, turns[index].fitted.content) for index in sorted(turns)
        )
        return (
            ChatMessage("system", self.system_text()),
            *history,
            ChatMessage("user", self.plan.current.content),
        )

    def dropped(self) -> tuple[DroppedItem, ...]:
        """What was left out or cut, slice by slice, each slice in fill priority."""
        out = [
            DroppedItem("state", key, "over_budget")
            for ref, (key, _) in enumerate(self.lines.extra)
            if ref not in self.extras.chosen
        ]
        for ref, fact in enumerate(self.facts):
            if ref not in self.fact_pool.chosen:
                reason = "over_budget" if fact.pinned or fact.is_rule else "irrelevant_over_budget"
                out.append(DroppedItem("fact", fact.id, reason))
        out.extend(
            DroppedItem("knowledge", item.id, "over_budget")
            for ref, item in enumerate(self.knowledge)
            if ref not in self.knowledge_pool.chosen
        )
        out.extend(
            DroppedItem("summary", summary.id, "over_budget")
            for ref, summary in enumerate(self.summaries)
            if ref not in self.summary_pool.chosen
        )
        episode = self.request.episode
        if episode.summary is not None and not self.with_summary:
            out.append(DroppedItem("episode_summary", episode.id, "over_budget"))
        turns = self.turns
        out.extend(dropped_turns(episode.turns, tuple(turns)))
        out.extend(
            DroppedItem("message", episode.turns[index].id, "truncated")
            for index in sorted(turns)
            if turns[index].fitted.truncated
        )
        if self.plan.current.truncated:
            out.append(DroppedItem("message", self.request.message_id, "truncated"))
        return tuple(out)


def _validate(request: ContextRequest) -> None:
    scopes = request.scopes
    for fact in request.facts:
        if fact.scope not in scopes:
            raise ScopeViolation(fact.id, fact.scope)
    episode = request.episode
    if request.state.channel != episode.channel:
        raise ContextInputError(
            "state_channel_mismatch",
            f"state is for {request.state.channel!r}, the episode is on {episode.channel!r}",
        )
    for turn in episode.turns:
        if turn.channel != episode.channel:
            raise ContextInputError(
                "foreign_channel_turn",
                f"turn {turn.id!r} is from {turn.channel!r}, the episode is on "
                f"{episode.channel!r}; other channels enter only as summaries",
            )
    for summary in request.summaries:
        if summary.episode_id == episode.id:
            raise ContextInputError(
                "summary_of_current_episode",
                f"summary {summary.id!r} belongs to the current episode; pass it as its summary",
            )


def _fact_cost(fact: FactItem, counter: TokenCounter) -> int:
    skeleton = fact_line_without_value(fact)
    if fact.tokens is None or skeleton is None:
        return counter.count(fact_line(fact))
    return counter.count(skeleton) + fact.tokens


def _summary_cost(summary: SummaryItem, counter: TokenCounter) -> int:
    # "\n" before the entry and after the tag, then the stored count of the text itself.
    return 2 + counter.count(summary_tag(summary)) + summary.tokens


def _estimate(
    messages: tuple[ChatMessage, ...], turns: dict[int, TurnPick], counter: TokenCounter
) -> int:
    # Stored counts for the history; only the new text (system, current message) is counted.
    system, current = messages[0], messages[-1]
    history = sum(pick.cost for pick in turns.values())
    return (
        counter.count_message(system.role, system.content)
        + history
        + counter.count_message(current.role, current.content)
        + counter.reply_primer
    )


def _full_history(request: ContextRequest, current_tokens: int) -> int:
    """What sending the raw history would cost: the caller's stored total when given, never
    less than the turns and current message this build saw."""
    seen = sum(turn.tokens for turn in request.episode.turns) + current_tokens
    if request.full_history_tokens is None:
        return seen
    return max(request.full_history_tokens, seen)
