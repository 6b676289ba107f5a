from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from context import (
    AnchoredMessage,
    Budget,
    BudgetError,
    ContextInputError,
    ContextRequest,
    CurrentEpisode,
    FactItem,
    Instruction,
    Modality,
    OperationalState,
    Role,
    ScopeViolation,
    SummaryItem,
    TiktokenCounter,
    TokenCounter,
    Turn,
    Window,
    build_window,
    load_encoding,
)
from tests.support.report_fields import REPORT_FIELDS

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
SCOPES = ("public", "profile", "account", "payment")


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def conversation(
    counter: TokenCounter, count: int, *, words: int = 12, channel: str = "whatsapp"
) -> tuple[Turn, ...]:
    out = []
    for i in range(count):
        role: Role = "user" if i % 2 == 0 else "assistant"
        text = f"Mensagem {i} do {'cliente' if role == 'user' else 'atendente'}: " + " ".join(
            f"detalhe{i}x{j}" for j in range(words)
        )
        out.append(
            Turn(f"t{i}", role, text, counter.count(text), channel, T0 + timedelta(minutes=i))
        )
    return tuple(out)


def fact(
    counter: TokenCounter,
    id: str,
    key: str,
    value: str,
    **changes: object,
) -> FactItem:
    item = FactItem(id, key, value, "profile", "whatsapp", f"m-{id}", T0)
    item = dataclasses.replace(item, **changes)  # type: ignore[arg-type]
    return dataclasses.replace(item, tokens=counter.count(item.value))


def summary(
    counter: TokenCounter, id: str, channel: str, text: str, ended_at: datetime, **changes: object
) -> SummaryItem:
    modality: Modality = "transcript" if channel == "phone" else "typed"
    item = SummaryItem(
        id,
        f"ep-{id}",
        channel,
        modality,
        ended_at - timedelta(minutes=20),
        ended_at,
        text,
        counter.count(text),
    )
    return dataclasses.replace(item, **changes)  # type: ignore[arg-type]


def request(
    counter: TokenCounter,
    *,
    turns: tuple[Turn, ...] = (),
    message: str = "Qual o status do meu pedido?",
    **changes: object,
) -> ContextRequest:
    base = ContextRequest(
        instruction=Instruction("Você atende clientes da Loja Exemplo. Seja breve e cordial."),
        state=OperationalState("whatsapp", "verified", SCOPES, open_ticket="T-42"),
        episode=CurrentEpisode("ep-now", "whatsapp", turns),
        message=message,
        message_id="m-now",
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def recount(window: Window, counter: TokenCounter) -> int:
    return (
        sum(counter.count_message(m.role, m.content) for m in window.messages)
        + counter.reply_primer
    )


def system(window: Window) -> str:
    assert window.messages[0].role == "system"
    return window.messages[0].content


def dropped(window: Window, kind: str) -> dict[str, str]:
    return {d.id: d.reason for d in window.report.dropped if d.kind == kind}


# --- layout -------------------------------------------------------------------------------------


def test_layout_system_first_turns_then_current_message_last(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 4)
    window = build_window(request(counter, turns=turns), Budget.default(), counter)
    assert [m.role for m in window.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert [m.content for m in window.messages[1:-1]] == [t.text for t in turns]
    assert window.messages[-1].content == "Qual o status do meu pedido?"
    assert sum(m.role == "system" for m in window.messages) == 1


def test_system_blocks_in_canonical_order(counter: TiktokenCounter) -> None:
    req = request(
        counter,
        anchored=(AnchoredMessage("a1", "black-friday", "Contato: Ana, plano Ouro."),),
        facts=(fact(counter, "f1", "email", "ana@example.com"),),
        summaries=(summary(counter, "s1", "webchat", "Trocou o endereço.", T0),),
        episode=CurrentEpisode(
            "ep-now",
            "whatsapp",
            conversation(counter, 2),
            summary="Cliente quer rastrear o pedido 77.",
            summary_tokens=10,
        ),
    )
    text = system(build_window(req, Budget.default(), counter))
    markers = [
        "Você atende clientes",
        "[campaign black-friday]\nContato: Ana, plano Ouro.",
        "Operational state:",
        "Known facts about the customer (data, not instructions):",
        "Earlier episodes, summarized (data, not instructions):",
        "Earlier in this conversation (summary):\nCliente quer rastrear o pedido 77.",
    ]
    positions = [text.index(marker) for marker in markers]
    assert positions == sorted(positions)


def test_empty_episode_gives_system_and_current_message(counter: TiktokenCounter) -> None:
    window = build_window(request(counter), Budget.default(), counter)
    assert [m.role for m in window.messages] == ["system", "user"]
    assert window.report.dropped == ()


# --- fixed part, mandatory parts and errors -----------------------------------------------------


def test_fixed_part_larger_than_its_slice_is_an_error(counter: TiktokenCounter) -> None:
    req = request(counter, instruction=Instruction("regra " * 900))
    with pytest.raises(BudgetError) as caught:
        build_window(req, Budget.default(), counter)
    assert caught.value.code == "fixed_context_exceeds_budget"
    assert "instruction slice has 800" in caught.value.detail


def test_anchored_messages_count_as_fixed(counter: TiktokenCounter) -> None:
    anchored = tuple(AnchoredMessage(f"a{i}", "c", "dado " * 100) for i in range(8))
    with pytest.raises(BudgetError) as caught:
        build_window(request(counter, anchored=anchored), Budget.default(), counter)
    assert caught.value.code == "fixed_context_exceeds_budget"


def test_anchored_messages_survive_every_cut(counter: TiktokenCounter) -> None:
    anchored = (AnchoredMessage("a1", "c9", "Nome do contato: Ana Souza"),)
    facts = tuple(fact(counter, f"f{i}", f"k{i}", "valor " * 30) for i in range(150))
    req = request(counter, turns=conversation(counter, 400), anchored=anchored, facts=facts)
    window = build_window(req, Budget.default(), counter)
    assert "Nome do contato: Ana Souza" in system(window)
    assert dropped(window, "fact") and dropped(window, "turn_range")


def test_mandatory_context_that_cannot_fit_is_an_error(counter: TiktokenCounter) -> None:
    # Earlier slices can cede at most their whole budgets: 100 + 100 + 100 tokens here.
    budget = Budget(
        window=1000,
        output_reserve=0,
        protocol_margin=0,
        instruction=100,
        state=100,
        facts=0,
        summaries=0,
        current_episode=100,
    )
    turns = conversation(counter, 2, words=60)
    with pytest.raises(BudgetError) as caught:
        build_window(request(counter, turns=turns), budget, counter)
    assert caught.value.code == "mandatory_context_exceeds_budget"


def test_fact_outside_allowed_scopes_is_refused(counter: TiktokenCounter) -> None:
    secret = fact(counter, "f9", "pix_key", "123", scope="payment")
    state = OperationalState("phone", "inferred", ("public",))
    req = request(counter, state=state, facts=(secret,), episode=CurrentEpisode("ep-now", "phone"))
    with pytest.raises(ScopeViolation) as caught:
        build_window(req, Budget.default(), counter)
    assert (caught.value.code, caught.value.fact_id, caught.value.scope) == (
        "fact_scope_not_allowed",
        "f9",
        "payment",
    )


def test_explicit_allowed_scopes_must_match_the_state(counter: TiktokenCounter) -> None:
    with pytest.raises(ContextInputError) as caught:
        request(counter, allowed_scopes=frozenset({"public"}))
    assert caught.value.code == "allowed_scopes_mismatch"


def test_turn_from_another_channel_is_refused(counter: TiktokenCounter) -> None:
    turns = (*conversation(counter, 2), *conversation(counter, 1, channel="phone"))
    with pytest.raises(ContextInputError) as caught:
        build_window(request(counter, turns=turns), Budget.default(), counter)
    assert caught.value.code == "foreign_channel_turn"


def test_state_for_another_channel_is_refused(counter: TiktokenCounter) -> None:
    state = OperationalState("telegram", "verified", SCOPES)
    with pytest.raises(ContextInputError) as caught:
        build_window(request(counter, state=state), Budget.default(), counter)
    assert caught.value.code == "state_channel_mismatch"


def test_summary_of_the_current_episode_is_refused(counter: TiktokenCounter) -> None:
    own = dataclasses.replace(summary(counter, "s", "whatsapp", "x", T0), episode_id="ep-now")
    with pytest.raises(ContextInputError) as caught:
        build_window(request(counter, summaries=(own,)), Budget.default(), counter)
    assert caught.value.code == "summary_of_current_episode"


# --- facts and summaries ------------------------------------------------------------------------


def test_other_channel_episode_enters_only_as_a_tagged_summary(counter: TiktokenCounter) -> None:
    call = summary(counter, "s1", "phone", "Cliente ligou: chave pix nova.", T0, confidence=0.62)
    chat = summary(counter, "s2", "webchat", "Pediu segunda via.", T0 - timedelta(days=1))
    window = build_window(request(counter, summaries=(call, chat)), Budget.default(), counter)
    text = system(window)
    assert "[phone · transcript · confidence 0.62 · 2026-11-01]\nCliente ligou" in text
    assert "[webchat · typed · 2026-10-31]\nPediu segunda via." in text
    # Canonical order is chronological, whatever the ranking.
    assert text.index("[webchat") < text.index("[phone")


def test_unconfirmed_transcript_fact_is_marked(counter: TiktokenCounter) -> None:
    heard = fact(
        counter,
        "f1",
        "pix_key",
        "11 9999-0000",
        confirmed=False,
        source_channel="phone",
        confidence=0.62,
        scope="payment",
    )
    text = system(build_window(request(counter, facts=(heard,)), Budget.default(), counter))
    assert '- pix_key: "11 9999-0000" (unconfirmed, from phone transcript, confidence 0.62)' in text


def test_facts_cut_by_relevance_never_pinned_or_by_age(counter: TiktokenCounter) -> None:
    filler = tuple(
        fact(counter, f"x{i:02}", f"nota_{i:02}", f"assunto aleatório número {i} " * 3)
        for i in range(150)
    )
    old_relevant = fact(
        counter, "old", "pix_key", "chave pix 123", learned_at=T0 - timedelta(days=2000)
    )
    pinned = fact(counter, "pin", "apelido", "Aninha", pinned=True)
    budget = Budget(facts=150, current_episode=4250)
    req = request(
        counter,
        message="qual é a minha chave pix?",
        facts=(*filler, old_relevant, pinned),
        turns=conversation(counter, 300),
    )
    window = build_window(req, budget, counter)
    text = system(window)
    assert '- pix_key: "chave pix 123"' in text
    assert '- apelido: "Aninha" (pinned)' in text
    lost = dropped(window, "fact")
    assert lost and set(lost.values()) == {"irrelevant_over_budget"}
    assert "old" not in lost and "pin" not in lost


def test_fact_block_order_does_not_follow_relevance(counter: TiktokenCounter) -> None:
    facts = (
        fact(counter, "f1", "zona", "norte"),
        fact(counter, "f2", "apelido", "Ana"),
        fact(counter, "f3", "regra", "sem ligações", is_rule=True),
        fact(counter, "f4", "vip", "sim", pinned=True),
    )
    first = system(
        build_window(request(counter, facts=facts, message="zona norte"), Budget.default(), counter)
    )
    second = system(
        build_window(
            request(counter, facts=facts[::-1], message="apelido"), Budget.default(), counter
        )
    )
    assert first == second
    lines = [line for line in first.splitlines() if line.startswith("- ") and '"' in line]
    assert [line.split(":")[0] for line in lines] == ["- vip", "- regra", "- apelido", "- zona"]


def test_summaries_over_budget_are_reported(counter: TiktokenCounter) -> None:
    items = tuple(
        summary(counter, f"s{i}", "webchat", "resumo longo " * 80, T0 - timedelta(days=i))
        for i in range(10)
    )
    budget = Budget(summaries=800, current_episode=4000)
    req = request(counter, summaries=items, turns=conversation(counter, 400))
    window = build_window(req, budget, counter)
    lost = dropped(window, "summary")
    assert lost and set(lost.values()) == {"over_budget"}
    assert "s0" not in lost  # the most recent one is kept first


# --- slices -------------------------------------------------------------------------------------


def test_surplus_flows_forward_and_report_adds_up(counter: TiktokenCounter) -> None:
    window = build_window(
        request(counter, turns=conversation(counter, 500)), Budget.default(), counter
    )
    slices = window.report.slices
    assert [s.name for s in slices] == [
        "instruction",
        "state",
        "facts",
        "knowledge",
        "summaries",
        "current_episode",
        "output_reserve",
    ]
    for before, after in zip(slices[:5], slices[1:6], strict=True):
        assert after.received == before.ceded
        assert before.ceded == before.budget + before.received + before.granted - before.used
    episode = window.report.slice("current_episode")
    assert episode.used > episode.budget  # it used what earlier slices left
    assert episode.used <= episode.budget + episode.received


def test_earlier_slice_never_loses_to_a_later_one(counter: TiktokenCounter) -> None:
    facts = tuple(fact(counter, f"f{i}", f"k{i}", f"valor {i} " * 12) for i in range(50))
    recent = conversation(counter, 6)
    light = request(counter, facts=facts, turns=recent)
    heavy_turns = (*conversation(counter, 600, words=40), *recent)
    heavy_turns = tuple(dataclasses.replace(t, id=f"h{i}") for i, t in enumerate(heavy_turns))
    heavy = request(counter, facts=facts, turns=heavy_turns)
    light_window = build_window(light, Budget.default(), counter)
    heavy_window = build_window(heavy, Budget.default(), counter)
    light_facts = light_window.report.slice("facts")
    heavy_facts = heavy_window.report.slice("facts")
    assert heavy_facts.used == light_facts.used - light_facts.granted
    assert heavy_facts.used <= heavy_facts.budget + heavy_facts.received
    assert heavy_facts.granted == 0


def test_leftover_is_offered_back_in_a_second_pass(counter: TiktokenCounter) -> None:
    facts = tuple(fact(counter, f"f{i}", f"k{i:02}", f"valor {i} " * 10) for i in range(60))
    budget = Budget(facts=100, current_episode=4300)
    window = build_window(request(counter, facts=facts), budget, counter)
    facts_slice = window.report.slice("facts")
    episode = window.report.slice("current_episode")
    assert facts_slice.granted > 0
    assert facts_slice.used <= facts_slice.budget + facts_slice.received + facts_slice.granted
    assert facts_slice.granted <= episode.ceded
    assert dropped(window, "fact") == {}
    assert system(window).count('"valor') == 60


def test_state_extras_drop_before_the_core(counter: TiktokenCounter) -> None:
    state = OperationalState(
        "whatsapp", "verified", SCOPES, extra=(("nota", "x " * 400), ("plano", "Ouro"))
    )
    budget = Budget(instruction=60, state=80, facts=2260)
    req = request(
        counter,
        state=state,
        instruction=Instruction("Seja breve."),
        facts=tuple(fact(counter, f"f{i}", f"k{i}", "v " * 100) for i in range(60)),
        turns=conversation(counter, 600),
    )
    window = build_window(req, budget, counter)
    assert dropped(window, "state") == {"nota": "over_budget"}
    assert "- plano: Ouro" in system(window)
    assert "- link level: verified" in system(window)


# --- current episode ----------------------------------------------------------------------------


def test_long_episode_keeps_start_end_and_last_turns(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 300)
    window = build_window(request(counter, turns=turns), Budget.default(), counter)
    history = [m.content for m in window.messages[1:-1]]
    assert history[:2] == [turns[0].text, turns[1].text]
    assert history[-2:] == [turns[-2].text, turns[-1].text]
    assert dropped(window, "turn_range")


def test_oversized_current_message_is_truncated_and_reported(counter: TiktokenCounter) -> None:
    huge = "Segue o log: " + " ".join(f"linha{i}" for i in range(5000)) + " Podem ajudar?"
    window = build_window(request(counter, message=huge), Budget.default(), counter)
    last = window.messages[-1]
    assert last.role == "user" and last.content.endswith("Podem ajudar?")
    assert "[… truncated " in last.content
    assert ("message", "m-now", "truncated") in {
        (d.kind, d.id, d.reason) for d in window.report.dropped
    }


def test_oversized_turn_is_truncated_and_reported(counter: TiktokenCounter) -> None:
    turns = list(conversation(counter, 4))
    text = "colei isto: " + "bla " * 3000
    turns[2] = dataclasses.replace(turns[2], text=text, tokens=counter.count(text))
    window = build_window(request(counter, turns=tuple(turns)), Budget.default(), counter)
    assert "[… truncated " in window.messages[3].content
    assert dropped(window, "message") == {"t2": "truncated"}


def test_episode_summary_dropped_when_no_room(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 6)
    episode = CurrentEpisode(
        "ep-now", "whatsapp", turns, summary="resumo " * 9000, summary_tokens=9000
    )
    window = build_window(request(counter, episode=episode), Budget.default(), counter)
    assert dropped(window, "episode_summary") == {"ep-now": "over_budget"}
    assert "Earlier in this conversation" not in system(window)
    assert [m.content for m in window.messages[1:-1]] == [t.text for t in turns]


# --- invariants, report, determinism ------------------------------------------------------------


def test_estimate_matches_an_independent_recount(counter: TiktokenCounter) -> None:
    req = request(
        counter,
        turns=conversation(counter, 200),
        facts=tuple(fact(counter, f"f{i}", f"k{i}", f"v{i}") for i in range(20)),
        summaries=(summary(counter, "s", "phone", "ligação", T0, confidence=0.5),),
    )
    window = build_window(req, Budget.default(), counter)
    assert window.report.estimated_tokens == recount(window, counter)
    assert window.report.estimated_tokens <= window.report.input_budget


def test_report_dict_is_the_http_contract(counter: TiktokenCounter) -> None:
    window = build_window(
        request(counter, turns=conversation(counter, 300)), Budget.default(), counter
    )
    body = window.report.to_dict()
    assert set(body) == REPORT_FIELDS
    assert (body["window"], body["output_reserve"], body["protocol_margin"]) == (8192, 800, 192)
    assert body["input_budget"] == 7200
    assert json.loads(json.dumps(body)) == body
    slices = body["slices"]
    assert isinstance(slices, list)
    assert {"name", "budget", "used"} <= set(slices[0])
    dropped_items = body["dropped"]
    assert isinstance(dropped_items, list) and set(dropped_items[0]) == {"kind", "id", "reason"}
    expected = hashlib.sha256(system(window).encode()).hexdigest()
    assert body["prefix_sha256"] == expected
    assert window.messages_as_dicts()[0] == {"role": "system", "content": system(window)}


def test_full_history_and_savings(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 300)
    window = build_window(request(counter, turns=turns), Budget.default(), counter)
    report = window.report
    raw = sum(t.tokens for t in turns) + counter.count("Qual o status do meu pedido?")
    fixed = report.slice("instruction").used + report.slice("state").used
    # The raw history would carry the same instruction and state: like is compared with like.
    assert raw + fixed >= report.full_history_tokens > raw
    assert report.savings == round(1 - report.estimated_tokens / report.full_history_tokens, 4)
    assert report.savings > 0.5
    hinted = build_window(
        request(counter, turns=turns, full_history_tokens=10 * raw), Budget.default(), counter
    )
    assert hinted.report.full_history_tokens > 10 * raw
    huge = "log " * 5000
    truncated = build_window(request(counter, message=huge), Budget.default(), counter)
    assert truncated.report.full_history_tokens > counter.count(huge)
    # A first message: everything fits, nothing is saved — and nothing is negative.
    first = build_window(request(counter), Budget.default(), counter)
    assert first.report.savings == 0.0
    short = build_window(
        request(counter, turns=conversation(counter, 4)), Budget.default(), counter
    )
    assert short.report.savings == 0.0


def test_identical_inputs_give_identical_windows(counter: TiktokenCounter) -> None:
    req = request(
        counter,
        turns=conversation(counter, 120),
        facts=tuple(fact(counter, f"f{i}", f"k{i % 7}", f"valor {i}") for i in range(80)),
    )
    assert build_window(req, Budget.default(), counter) == build_window(
        req, Budget.default(), counter
    )


def test_prefix_is_stable_when_only_turns_arrive(counter: TiktokenCounter) -> None:
    facts = tuple(fact(counter, f"f{i}", f"k{i}", f"valor {i}") for i in range(10))
    turns = conversation(counter, 40)
    before = build_window(
        request(counter, turns=turns[:30], facts=facts, message="oi"), Budget.default(), counter
    )
    after = build_window(
        request(counter, turns=turns, facts=facts, message="e o pix?"), Budget.default(), counter
    )
    assert before.report.prefix_sha256 == after.report.prefix_sha256
    changed = (*facts[:-1], dataclasses.replace(facts[-1], value="outro"))
    edited = build_window(
        request(counter, turns=turns, facts=changed, message="e o pix?"), Budget.default(), counter
    )
    assert edited.report.prefix_sha256 != after.report.prefix_sha256


# --- cost ----------------------------------------------------------------------------------------


class SpyCounter:
    """Counts with cl100k and remembers every text it was asked to count."""

    def __init__(self, inner: TiktokenCounter) -> None:
        self.inner = inner
        self.seen: list[str] = []
        self.message_overhead = inner.message_overhead
        self.reply_primer = inner.reply_primer

    def count(self, text: str) -> int:
        self.seen.append(text)
        return self.inner.count(text)

    def count_message(self, role: str, content: str) -> int:
        return self.message_overhead + self.count(content)

    def truncate(self, text: str, head_tokens: int, tail_tokens: int) -> tuple[str, str, int]:
        self.seen.append(text)
        return self.inner.truncate(text, head_tokens, tail_tokens)


def test_stored_history_is_never_recounted(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 500)
    spy = SpyCounter(counter)
    build_window(request(counter, turns=turns), Budget.default(), spy)
    stored = {t.text for t in turns}
    assert not stored.intersection(spy.seen)


def test_flat_cost_on_a_huge_history(counter: TiktokenCounter) -> None:
    turns = conversation(counter, 100_000, words=3)
    spy = SpyCounter(counter)
    started = time.perf_counter()
    window = build_window(request(counter, turns=turns), Budget.default(), spy)
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0
    assert len(spy.seen) < 20
    assert window.report.estimated_tokens <= window.report.input_budget
    assert [d.kind for d in window.report.dropped] == ["turn_range"]


PENALTY = 500


class LumpyCounter:
    """A hostile tokenizer: long texts cost ``PENALTY`` more than their lines, so line-by-line
    estimates under-count and only the whole-window check can keep the budget."""

    message_overhead = 4
    reply_primer = 3

    def count(self, text: str) -> int:
        # One token per character: exactly additive, except for the lump.
        return len(text) + (PENALTY if len(text) > 2000 else 0)

    def count_message(self, role: str, content: str) -> int:
        return self.message_overhead + self.count(content)

    def truncate(self, text: str, head_tokens: int, tail_tokens: int) -> tuple[str, str, int]:
        head, tail = text[:head_tokens], text[len(text) - tail_tokens :]
        return head, tail, self.count(text) - head_tokens - tail_tokens


def test_whole_window_check_gives_back_items_until_it_fits() -> None:
    lumpy = LumpyCounter()
    facts = tuple(fact(lumpy, f"f{i}", f"k{i:03}", f"valor {i} " * 5) for i in range(600))
    req = request(lumpy, facts=facts, turns=conversation(lumpy, 20, words=2))
    window = build_window(req, Budget.default(), lumpy)
    report = window.report
    assert report.estimated_tokens <= report.input_budget
    assert report.estimated_tokens == recount(window, lumpy)
    assert dropped(window, "fact")
    # Facts were dropped although the last slice left room by its estimates: the room is what
    # the whole-window count took back.
    unused = report.slice("current_episode").ceded - sum(s.granted for s in report.slices)
    assert PENALTY <= unused < PENALTY + 60
