"""The knowledge slice of a window: relevant chunks only, numbered, dated, within budget."""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest

from context import (
    Budget,
    ContextRequest,
    CurrentEpisode,
    Instruction,
    OperationalState,
    TiktokenCounter,
    build_window,
    load_encoding,
)
from context.inputs import KnowledgeItem
from context.knowledge import KNOWLEDGE_HEADER, MAX_KNOWLEDGE_LINES, rank_knowledge
from context.knowledge_refs import KnowledgeRef

RETURNS = KnowledgeItem(
    id="c1",
    document_id="doc-returns",
    title="Returns policy",
    text="Items can be returned within 30 days of delivery for a full refund.",
    updated_at=date(2026, 11, 2),
    url="https://shop.example.com/returns",
)
SHIPPING = KnowledgeItem(
    id="c2",
    document_id="doc-shipping",
    title="Shipping times",
    text="Orders ship within two business days; express delivery arrives the next day.",
    updated_at=date(2026, 10, 5),
)
GIFT_CARDS = KnowledgeItem(
    id="c3",
    document_id="doc-gifts",
    title="Gift cards",
    text="Gift cards never expire and can be used on any purchase in the store.",
    updated_at=date(2026, 9, 1),
)
CHUNKS = (GIFT_CARDS, SHIPPING, RETURNS)


@pytest.fixture(scope="module")
def counter() -> TiktokenCounter:
    return TiktokenCounter(load_encoding())


def request(message: str, knowledge: tuple[KnowledgeItem, ...] = CHUNKS) -> ContextRequest:
    return ContextRequest(
        instruction=Instruction("You answer the customers of Example Shop."),
        state=OperationalState("webchat", "anonymous", ("public",)),
        episode=CurrentEpisode("ep-now", "webchat"),
        message=message,
        knowledge=knowledge,
    )


def system(message: str, counter: TiktokenCounter, budget: Budget | None = None) -> str:
    window = build_window(request(message), budget or Budget.default(), counter)
    return window.messages[0].content


def test_the_knowledge_slice_is_reported_between_facts_and_summaries(
    counter: TiktokenCounter,
) -> None:
    window = build_window(
        request("Can I get a refund on returned items?"), Budget.default(), counter
    )
    names = [item.name for item in window.report.slices]
    assert names.index("facts") + 1 == names.index("knowledge") == names.index("summaries") - 1
    knowledge = window.report.slice("knowledge")
    assert knowledge.budget == 600
    assert 0 < knowledge.used <= knowledge.budget + knowledge.received
    assert {"name": "knowledge"}.items() <= window.report.to_dict()["slices"][3].items()  # type: ignore[index]


def test_a_relevant_chunk_enters_numbered_with_its_title_and_date(
    counter: TiktokenCounter,
) -> None:
    window = build_window(
        request("Can I get a refund on returned items?"), Budget.default(), counter
    )
    text = window.messages[0].content
    assert KNOWLEDGE_HEADER in text
    assert "never write a URL" in KNOWLEDGE_HEADER and "[k1]" in KNOWLEDGE_HEADER
    assert (
        "[k1] Returns policy (2026-11-02) — Items can be returned within 30 days of delivery "
        "for a full refund." in text
    )
    assert "Gift cards" not in text and "Shipping times" not in text
    assert "https://" not in text  # the model is never shown a URL to copy
    assert window.knowledge == (
        KnowledgeRef(1, "doc-returns", "Returns policy", RETURNS.url, date(2026, 11, 2)),
    )


def test_several_chunks_are_numbered_in_order_newest_document_first(
    counter: TiktokenCounter,
) -> None:
    window = build_window(
        request("delivery of returned orders and gift cards purchase"), Budget.default(), counter
    )
    text = window.messages[0].content
    lines = [line for line in text.splitlines() if line.startswith("[k")]
    assert [line.split(" (")[0] for line in lines] == [
        "[k1] Returns policy",
        "[k2] Shipping times",
        "[k3] Gift cards",
    ]
    assert [(ref.number, ref.document_id) for ref in window.knowledge] == [
        (1, "doc-returns"),
        (2, "doc-shipping"),
        (3, "doc-gifts"),
    ]


def test_nothing_relevant_cedes_the_whole_slice_forward(counter: TiktokenCounter) -> None:
    window = build_window(request("Olá, bom dia!"), Budget.default(), counter)
    knowledge = window.report.slice("knowledge")
    assert knowledge.used == 0
    assert knowledge.ceded == knowledge.budget + knowledge.received
    assert window.report.slice("summaries").received == knowledge.ceded
    assert KNOWLEDGE_HEADER not in window.messages[0].content
    assert window.knowledge == ()


def test_a_slice_of_zero_turns_the_knowledge_off(counter: TiktokenCounter) -> None:
    off = dataclasses.replace(Budget.default(), knowledge=0, summaries=1600)
    window = build_window(request("refund for returned items"), off, counter)
    assert window.report.slice("knowledge").used == 0
    assert window.knowledge == ()
    assert "Returns policy" not in window.messages[0].content


def test_a_chunk_that_does_not_fit_is_reported_and_the_window_stays_within_budget(
    counter: TiktokenCounter,
) -> None:
    # Room for the instruction, the state and the message, and 40 tokens of knowledge: less
    # than the chunk's line.
    tight = Budget(
        window=15 + 24 + 8 + 40 + 2,
        output_reserve=0,
        protocol_margin=0,
        instruction=15,
        state=24,
        facts=0,
        knowledge=40,
        summaries=0,
        current_episode=8 + 2,
        max_single_message_tokens=100,
        truncated_message_target_tokens=50,
    )
    window = build_window(request("refund for returned items"), tight, counter)
    assert window.report.estimated_tokens <= tight.input_budget
    assert window.knowledge == ()
    assert ("knowledge", "c1", "over_budget") in {
        (d.kind, d.id, d.reason) for d in window.report.dropped
    }


def test_many_long_chunks_never_exceed_the_budget(counter: TiktokenCounter) -> None:
    chunks = tuple(
        dataclasses.replace(
            RETURNS,
            id=f"c{i}",
            document_id=f"doc-{i}",
            text="Returns and refunds: " + "the refund is sent to the card used. " * 30,
            updated_at=date(2026, 1, 1 + i),
        )
        for i in range(20)
    )
    budget = Budget.for_window(4096)
    window = build_window(request("refund", chunks), budget, counter)
    knowledge = window.report.slice("knowledge")
    assert 0 < len(window.knowledge) <= MAX_KNOWLEDGE_LINES < len(chunks)
    assert window.report.estimated_tokens <= budget.input_budget
    assert knowledge.used <= knowledge.budget + knowledge.received + knowledge.granted
    numbers = [ref.number for ref in window.knowledge]
    assert numbers == list(range(1, len(numbers) + 1))
    text = window.messages[0].content
    assert f"[k{len(numbers)}] " in text and f"[k{len(numbers) + 1}] " not in text


def test_however_much_room_is_ceded_a_window_holds_a_few_chunks(
    counter: TiktokenCounter,
) -> None:
    chunks = tuple(
        dataclasses.replace(RETURNS, id=f"c{i}", document_id=f"doc-{i}", text=f"Refund rule {i}.")
        for i in range(30)
    )
    window = build_window(request("refund", chunks), Budget.for_window(32768), counter)
    assert len(window.knowledge) == MAX_KNOWLEDGE_LINES
    knowledge = window.report.slice("knowledge")
    assert knowledge.ceded == knowledge.budget + knowledge.received - knowledge.used > 10_000


def test_ranking_keeps_only_chunks_near_the_best_and_prefers_the_newer_on_a_tie() -> None:
    older = dataclasses.replace(
        RETURNS, id="old", document_id="doc-old", updated_at=date(2025, 1, 1)
    )
    ranked = rank_knowledge("refund returned items", (older, GIFT_CARDS, RETURNS))
    assert [item.id for item in ranked] == ["c1", "old"]
    assert rank_knowledge("", CHUNKS) == ()
    assert rank_knowledge("weather forecast", CHUNKS) == ()


def test_identical_inputs_give_identical_windows(counter: TiktokenCounter) -> None:
    first = build_window(request("refund delivery"), Budget.default(), counter)
    again = build_window(
        request("refund delivery", tuple(reversed(CHUNKS))), Budget.default(), counter
    )
    assert first.messages == again.messages
    assert first.knowledge == again.knowledge
