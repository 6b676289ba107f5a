from __future__ import annotations

from datetime import UTC, datetime, timedelta

from context.inputs import FactItem, SummaryItem, Turn
from context.relevance import (
    SUBJECT_TURNS,
    bm25_scores,
    rank_facts,
    rank_summaries,
    subject_terms,
    terms,
)

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def fact(
    id: str,
    key: str,
    value: str,
    *,
    tags: tuple[str, ...] = (),
    pinned: bool = False,
    is_rule: bool = False,
    learned_at: datetime = T0,
    confirmed: bool = True,
) -> FactItem:
    return FactItem(
        id,
        key,
        value,
        "profile",
        "whatsapp",
        f"m-{id}",
        learned_at,
        tags=tags,
        pinned=pinned,
        is_rule=is_rule,
        confirmed=confirmed,
    )


def summary(id: str, text: str, ended_at: datetime) -> SummaryItem:
    return SummaryItem(id, f"ep-{id}", "webchat", "typed", ended_at, ended_at, text, 10)


def test_terms_fold_accents_case_stopwords_and_plurals() -> None:
    assert terms("Qual é o ENDEREÇO de entrega dos pedidos?") == (
        "endereco",
        "entrega",
        "pedido",
    )
    assert terms("Where are my orders?") == ("order",)


def test_terms_keep_numbers_and_split_identifiers() -> None:
    assert terms("pedido #12345, e-mail ana@example.org") == (
        "pedido",
        "12345",
        "mail",
        "ana",
        "example",
        "org",
    )
    assert terms("order_id") == ("order", "id")


def test_bm25_prefers_the_matching_document() -> None:
    docs = [terms("chave pix cadastrada"), terms("endereco de entrega"), terms("telefone")]
    scores = bm25_scores(terms("qual minha chave pix"), docs)
    assert scores[0] > 0
    assert scores[1] == scores[2] == 0.0


def test_bm25_rare_terms_weigh_more() -> None:
    docs = [terms("pedido atrasado"), terms("pedido entregue"), terms("pedido cancelado")]
    scores = bm25_scores(terms("pedido cancelado"), docs)
    assert scores[2] > scores[0] == scores[1] > 0


def test_bm25_edge_cases() -> None:
    assert bm25_scores(("pix",), []) == ()
    assert bm25_scores((), [("pix",)]) == (0.0,)


def test_subject_uses_message_recent_turns_and_tags() -> None:
    turns = tuple(
        Turn(f"t{i}", "user", f"assunto{i}", 1, "webchat", T0) for i in range(SUBJECT_TURNS + 3)
    )
    subject = subject_terms("boleto", turns, ("faturamento",))
    assert "boleto" in subject and "faturamento" in subject
    assert f"assunto{SUBJECT_TURNS + 2}" in subject
    assert "assunto0" not in subject  # older than the recent turns


def test_pinned_and_rules_come_first_then_relevance() -> None:
    facts = (
        fact("a", "email", "ana@example.com"),
        fact("b", "pix_key", "chave 123"),
        fact("c", "no_calls", "não ligar à noite", is_rule=True),
        fact("d", "vip", "cliente antigo", pinned=True),
    )
    ranked = rank_facts(facts, terms("qual minha chave pix"))
    assert [f.id for f in ranked] == ["c", "d", "b", "a"]


def test_age_never_lowers_a_fact() -> None:
    old = fact("z-old", "pix_key", "chave pix 1", learned_at=T0 - timedelta(days=900))
    new = fact("a-new", "email", "ana@example.com", learned_at=T0)
    ranked = rank_facts((new, old), terms("minha chave pix"))
    assert ranked[0] is old
    # With equal relevance, order is by key/id, not by learned_at.
    a = fact("x1", "city", "Recife", learned_at=T0 - timedelta(days=900))
    b = fact("x2", "city", "Recife", learned_at=T0)
    assert rank_facts((b, a), ()) == (a, b)


def test_subject_tags_boost_tagged_facts() -> None:
    facts = (fact("a", "email", "ana@example.com"), fact("b", "plan", "premium", tags=("billing",)))
    assert rank_facts(facts, (), ("billing",))[0].id == "b"


def test_confirmed_facts_win_ties() -> None:
    facts = (fact("a", "pix", "1", confirmed=False), fact("b", "pix", "1"))
    assert [f.id for f in rank_facts(facts, ())] == ["b", "a"]


def test_summaries_by_recency_when_nothing_matches() -> None:
    items = tuple(summary(f"s{i}", f"conversa {i}", T0 + timedelta(days=i)) for i in range(4))
    ranked = rank_summaries(items, terms("boleto"))
    assert [s.id for s in ranked] == ["s3", "s2", "s1", "s0"]


def test_relevant_old_summary_beats_recent_unrelated_one() -> None:
    items = (
        summary("old", "cliente pediu segunda via do boleto", T0 - timedelta(days=60)),
        summary("new", "conversa sobre entrega", T0),
        summary("mid", "conversa sobre troca", T0 - timedelta(days=5)),
    )
    ranked = rank_summaries(items, terms("preciso do boleto"))
    assert ranked[0].id == "old"


def test_ranking_is_deterministic() -> None:
    facts = tuple(fact(f"f{i}", f"k{i % 3}", f"valor {i}") for i in range(30))
    subject = terms("valor 7")
    assert rank_facts(facts, subject) == rank_facts(facts, subject)
