"""Invariants of the window over random histories, facts and budgets (real cl100k counts)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from context import (
    AnchoredMessage,
    Budget,
    BudgetError,
    ContextInputError,
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    OperationalState,
    ScopeViolation,
    SummaryItem,
    TiktokenCounter,
    Turn,
    Window,
    build_window,
    load_encoding,
)
from context.render import fixed_text

T = TypeVar("T")
T0 = datetime(2026, 11, 1, tzinfo=UTC)
CHANNEL = "whatsapp"
ALL_SCOPES = ("public", "profile", "account", "payment")
PROPERTY = settings(max_examples=120, deadline=None)

WORDS = (
    "pedido",
    "entrega",
    "boleto",
    "pix",
    "chave",
    "endereço",
    "atraso",
    "troca",
    "olá",
    "obrigado",
    "order",
    "refund",
    "tracking",
    "email",
    "please",
    "12345",
    "R$",
    "99,90",
    "ação",
    "São",
    "Paulo",
    "😀",
    "#",
    "—",
    "\n",
    "não",
    "já",
    "CEP",
    "01310-100",
    "<|endoftext|>",
)


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def texts(max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), max_size=max_words).map(" ".join)


long_texts = st.builds(
    lambda word, n: (word + " ") * n, st.sampled_from(WORDS[:12]), st.integers(1300, 2500)
)


@dataclass(frozen=True, slots=True)
class TurnSpec:
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class FactSpec:
    key: str
    value: str
    scope: str
    pinned: bool
    is_rule: bool
    confirmed: bool
    source: str
    stored_count: bool


@dataclass(frozen=True, slots=True)
class SummarySpec:
    channel: str
    text: str
    hours_ago: int
    confidence: float | None


@dataclass(frozen=True, slots=True)
class Spec:
    budget: Budget
    instruction: str
    anchored: tuple[str, ...]
    turns: tuple[TurnSpec, ...]
    facts: tuple[FactSpec, ...]
    summaries: tuple[SummarySpec, ...]
    message: str
    episode_summary: str | None
    extras: tuple[str, ...]


turn_specs = st.builds(
    TurnSpec,
    st.sampled_from(("user", "assistant")),
    st.one_of(texts(40), texts(40), texts(40), texts(40), texts(40), texts(40), long_texts),
)
fact_specs = st.builds(
    FactSpec,
    st.sampled_from(("email", "pix_key", "cep", "nome", "plano", "regra")),
    texts(30),
    st.sampled_from(ALL_SCOPES),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from(("whatsapp", "phone", "webchat")),
    st.booleans(),
)
summary_specs = st.builds(
    SummarySpec,
    st.sampled_from(("phone", "webchat", "telegram", "whatsapp")),
    texts(120),
    st.integers(1, 5000),
    st.one_of(st.none(), st.floats(0, 1)),
)


def sized(items: st.SearchStrategy[T], most: int) -> st.SearchStrategy[tuple[T, ...]]:
    """Tuples with a length drawn uniformly, so long histories are as common as short ones."""
    return st.integers(0, most).flatmap(
        lambda n: st.lists(items, min_size=n, max_size=n).map(tuple)
    )


@st.composite
def free_budgets(draw: st.DrawFn) -> Budget:
    """Arbitrary slice sizes, from starved to generous, and per-message limits to match."""
    slices = {
        "instruction": draw(st.integers(150, 1200)),
        "state": draw(st.integers(0, 400)),
        "facts": draw(st.integers(0, 1500)),
        "summaries": draw(st.integers(0, 1500)),
        "current_episode": draw(st.integers(100, 3000)),
    }
    reserve, margin = draw(st.integers(0, 1000)), draw(st.integers(0, 200))
    window = sum(slices.values()) + reserve + margin + draw(st.integers(0, 100))
    limit = draw(st.integers(100, 1500))
    return Budget(
        window=window,
        output_reserve=reserve,
        protocol_margin=margin,
        max_single_message_tokens=limit,
        truncated_message_target_tokens=draw(st.integers(20, limit - 1)),
        head_turns=draw(st.integers(0, 3)),
        **slices,
    )


budgets = st.one_of(
    st.sampled_from((2048, 4096, 8192, 16384)).map(Budget.for_window),
    free_budgets(),
)

specs = st.builds(
    Spec,
    budget=budgets,
    instruction=texts(30),
    anchored=st.lists(texts(10), max_size=2).map(tuple),
    turns=sized(turn_specs, 80),
    facts=sized(fact_specs, 60),
    summaries=sized(summary_specs, 16),
    message=st.one_of(texts(30), texts(30), long_texts),
    episode_summary=st.one_of(st.none(), texts(80)),
    extras=st.lists(texts(20), max_size=3).map(tuple),
)


def build_request(spec: Spec, counter: TiktokenCounter) -> ContextRequest:
    turns = tuple(
        Turn(
            f"t{i:03}",
            "user" if t.role == "user" else "assistant",
            f"[t{i:03}] {t.text}",
            counter.count(f"[t{i:03}] {t.text}"),
            CHANNEL,
            T0 + timedelta(minutes=i),
        )
        for i, t in enumerate(spec.turns)
    )
    facts = tuple(
        FactItem(
            f"f{i:03}",
            f.key,
            f.value,
            f.scope,
            f.source,
            f"m{i}",
            T0,
            pinned=f.pinned,
            is_rule=f.is_rule,
            confirmed=f.confirmed,
            confidence=0.5,
            tokens=counter.count(f.value) if f.stored_count else None,
        )
        for i, f in enumerate(spec.facts)
    )
    summaries = tuple(
        SummaryItem(
            f"s{i:03}",
            f"ep{i:03}",
            s.channel,
            "transcript" if s.channel == "phone" else "typed",
            T0 - timedelta(hours=s.hours_ago + 1),
            T0 - timedelta(hours=s.hours_ago),
            s.text,
            counter.count(s.text),
            confidence=s.confidence,
        )
        for i, s in enumerate(spec.summaries)
    )
    return ContextRequest(
        instruction=Instruction(spec.instruction),
        state=OperationalState(
            CHANNEL,
            "verified",
            ALL_SCOPES,
            open_ticket="T-1",
            extra=tuple((f"x{i}", v) for i, v in enumerate(spec.extras)),
        ),
        episode=CurrentEpisode("ep-now", CHANNEL, turns, summary=spec.episode_summary),
        message=spec.message,
        anchored=tuple(AnchoredMessage(f"a{i}", "camp", a) for i, a in enumerate(spec.anchored)),
        facts=facts,
        summaries=summaries,
    )


def try_build(request: ContextRequest, budget: Budget, counter: TiktokenCounter) -> Window | None:
    """Build, accepting only the documented budget failures (and checking the fixed one)."""
    try:
        return build_window(request, budget, counter)
    except BudgetError as error:
        if error.code == "fixed_context_exceeds_budget":
            fixed = counter.count(fixed_text(request.instruction, request.anchored)) + 7
            assert fixed > budget.instruction
        else:
            assert error.code == "mandatory_context_exceeds_budget"
        return None


def built(request: ContextRequest, budget: Budget, counter: TiktokenCounter) -> Window:
    """`try_build`, discarding the example when the budget refuses it."""
    window = try_build(request, budget, counter)
    assume(window is not None)
    assert window is not None
    return window


def recount(window: Window, counter: TiktokenCounter) -> int:
    return sum(counter.count_message(m.role, m.content) for m in window.messages) + 3


@PROPERTY
@given(spec=specs)
def test_window_never_exceeds_the_input_budget(spec: Spec, counter: TiktokenCounter) -> None:
    budget = spec.budget
    window = built(build_request(spec, counter), budget, counter)
    limit = budget.window - budget.output_reserve - budget.protocol_margin
    assert window.report.estimated_tokens <= limit
    assert recount(window, counter) == window.report.estimated_tokens


@PROPERTY
@given(spec=specs)
def test_no_slice_takes_from_an_earlier_one(spec: Spec, counter: TiktokenCounter) -> None:
    budget = spec.budget
    window = built(build_request(spec, counter), budget, counter)
    slices = window.report.slices[:5]
    previous_ceded = 0
    for item in slices:
        assert item.received == previous_ceded
        assert 0 <= item.used <= item.budget + item.received + item.granted
        previous_ceded = item.ceded
    episode = window.report.slice("current_episode")
    # Second-pass grants come only from what the last slice left over.
    assert sum(item.granted for item in slices) <= episode.ceded
    assert window.report.slice("instruction").granted == episode.granted == 0


@PROPERTY
@given(spec=specs, older=st.integers(1, 300))
def test_a_heavier_episode_takes_nothing_from_earlier_slices(
    spec: Spec, older: int, counter: TiktokenCounter
) -> None:
    light = build_request(spec, counter)
    text = "histórico antigo do cliente " * 40
    old = tuple(
        Turn(f"h{i:03}", "user" if i % 2 else "assistant", text, counter.count(text), CHANNEL, T0)
        for i in range(older)
    )
    heavy = replace(light, episode=replace(light.episode, turns=(*old, *light.episode.turns)))
    light_window = try_build(light, spec.budget, counter)
    heavy_window = try_build(heavy, spec.budget, counter)
    assume(light_window is not None and heavy_window is not None)
    assert light_window is not None and heavy_window is not None
    for window in (light_window, heavy_window):
        # Skip the rare build where the whole-window check had to give members back.
        assume(sum(s.used for s in window.report.slices) >= window.report.estimated_tokens)
    for name in ("instruction", "state", "facts", "summaries"):
        before, after = light_window.report.slice(name), heavy_window.report.slice(name)
        # First-pass usage of an earlier slice does not depend on the episode at all.
        assert before.used - before.granted == after.used - after.granted


@PROPERTY
@given(spec=specs)
def test_layout_and_last_turns(spec: Spec, counter: TiktokenCounter) -> None:
    request = build_request(spec, counter)
    window = built(request, spec.budget, counter)
    messages = window.messages
    assert messages[0].role == "system"
    assert all(m.role != "system" for m in messages[1:])
    assert messages[-1].role == "user"
    assert messages[-1].content[:20] == request.message[:20]
    ids = [m.content[1:5] for m in messages[1:-1]]
    assert ids == sorted(ids)  # chronological
    turns = request.episode.turns
    for role in ("user", "assistant"):
        last = next((t for t in reversed(turns) if t.role == role), None)
        if last is not None:
            assert any(
                m.role == role and m.content.startswith(f"[{last.id}]") for m in messages[1:-1]
            )


@PROPERTY
@given(spec=specs, foreign=st.lists(texts(20), min_size=1, max_size=5), smuggle=st.booleans())
def test_other_channels_enter_only_as_summaries(
    spec: Spec, foreign: list[str], smuggle: bool, counter: TiktokenCounter
) -> None:
    request = build_request(spec, counter)
    raw = tuple(
        Turn(f"p{i}", "user", f"RAWCALL{i} {text}", counter.count(text), "phone", T0)
        for i, text in enumerate(foreign)
    )
    call = SummaryItem(
        "call", "ep-call", "phone", "transcript", T0, T0, "ligação resumida", 3, confidence=0.62
    )
    request = replace(request, summaries=(*request.summaries, call))
    if smuggle:
        turns = (*request.episode.turns, *raw)
        with pytest.raises(ContextInputError) as caught:
            build_window(
                replace(request, episode=replace(request.episode, turns=turns)),
                spec.budget,
                counter,
            )
        assert caught.value.code == "foreign_channel_turn"
        return
    window = built(request, spec.budget, counter)
    assert not any("RAWCALL" in m.content for m in window.messages)


@PROPERTY
@given(spec=specs)
def test_identical_inputs_identical_output(spec: Spec, counter: TiktokenCounter) -> None:
    budget = spec.budget
    first = try_build(build_request(spec, counter), budget, counter)
    second = try_build(build_request(spec, counter), budget, counter)
    assert first == second
    if first is not None and second is not None:
        assert [m.content.encode() for m in first.messages] == [
            m.content.encode() for m in second.messages
        ]


PREFIX_KINDS = {"fact", "summary", "episode_summary", "state"}


@settings(max_examples=80, deadline=None)
@given(
    spec=specs,
    split=st.floats(0.3, 0.9),
    later_message=texts(20),
)
def test_prefix_unchanged_when_only_new_turns_arrive(
    spec: Spec, split: float, later_message: str, counter: TiktokenCounter
) -> None:
    spec = replace(
        spec, budget=Budget.for_window(16384), facts=spec.facts[:10], summaries=spec.summaries[:4]
    )
    full = build_request(spec, counter)
    cut = int(len(full.episode.turns) * split)
    earlier = replace(full, episode=replace(full.episode, turns=full.episode.turns[:cut]))
    later = replace(full, message=later_message)
    budget = spec.budget
    before = try_build(earlier, budget, counter)
    after = try_build(later, budget, counter)
    assume(before is not None and after is not None)
    assert before is not None and after is not None
    # Membership of the prefix only moves when something did not fit.
    assume(not any(d.kind in PREFIX_KINDS for d in (*before.report.dropped, *after.report.dropped)))
    assert before.report.prefix_sha256 == after.report.prefix_sha256
    assert before.messages[0] == after.messages[0]


@settings(max_examples=60, deadline=None)
@given(spec=specs, bad_scope=st.sampled_from(("payment", "account", "secret")))
def test_fact_outside_allowed_scopes_always_refused(
    spec: Spec, bad_scope: str, counter: TiktokenCounter
) -> None:
    request = build_request(spec, counter)
    allowed = tuple(s for s in ALL_SCOPES if s != bad_scope)
    leaked = FactItem("leak", "pix_key", "123", bad_scope, "whatsapp", "m", T0)
    safe = tuple(f for f in request.facts if f.scope in allowed)
    request = replace(
        request, state=replace(request.state, allowed_scopes=allowed), facts=(*safe, leaked)
    )
    with pytest.raises(ScopeViolation) as caught:
        build_window(request, spec.budget, counter)
    assert caught.value.code == "fact_scope_not_allowed"


@settings(max_examples=60, deadline=None)
@given(spec=specs, instruction_budget=st.integers(0, 200))
def test_fixed_part_too_large_is_always_an_error(
    spec: Spec, instruction_budget: int, counter: TiktokenCounter
) -> None:
    request = build_request(spec, counter)
    request = replace(request, instruction=Instruction(spec.instruction + " regra" * 200))
    budget = replace(spec.budget, instruction=min(instruction_budget, spec.budget.instruction))
    with pytest.raises(BudgetError) as caught:
        build_window(request, budget, counter)
    assert caught.value.code == "fixed_context_exceeds_budget"
