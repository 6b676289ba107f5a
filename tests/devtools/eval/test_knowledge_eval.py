"""The knowledge evaluation on a small FAQ written in the Debian FAQ's plain-text layout: the
loader, the slice's rankings, the metrics and the command."""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import pytest

from context import TiktokenCounter, load_encoding
from context.knowledge_refs import KnowledgeRef
from devtools.eval.faq import CorpusMissing, load_corpus, read_faq
from devtools.eval.knowledge import (
    HYBRID,
    LEXICAL,
    Citation,
    KnowledgeOutcome,
    cited_reply,
    evaluate_knowledge,
    knowledge_budget,
)
from devtools.eval.knowledge_report import knowledge_figures, summarize_knowledge
from devtools.eval.vectors import DiskCachedEmbedder
from gateway.cli import main
from identity.audience import Audience
from tests.devtools.eval.test_locomo_hybrid import ConceptEmbedder

NBSP = "\u00a0"

# Front matter with a table of contents (numbered lines that are no sections), headings
# wrapped over two lines, a heading that is a title and not a question, answers indented, a
# cross-reference quoting another section's heading.
FAQ = f"""
                      The Example Shop FAQ

Table of Contents

1. Orders
    1.1. How do I return an item I bought online?
2. Accounts

Chapter{NBSP}1.{NBSP}Orders

1.1.{NBSP}How do I return an item I bought
online?

    Items can be sent back within 30 days of delivery for a full
    refund. Print the label from your account page.

1.2.{NBSP}Shipping times

    Parcels leave the warehouse within two working days and reach
    most addresses in a week.

      * Express parcels arrive the next day.

1.3.{NBSP}Which pets may come into the shop?

    Dogs on a lead and cats in a carrier are welcome; the greyhound
    club meets here on Sundays.

Chapter{NBSP}2.{NBSP}Accounts

2.1.{NBSP}How do I change my password?

    Open Settings, choose Security and type the new password twice.

2.2.{NBSP}Can I close my account?

    Write to support and we erase your account and its orders
    within a month. Items bought before stay yours: see Section 1.1,
    “How do I return an item I bought online?”.
"""


def _write(tmp_path: Path, *, compressed: bool = True) -> Path:
    if compressed:
        path = tmp_path / "faq.en.txt.gz"
        path.write_bytes(gzip.compress(FAQ.encode("utf-8")))
    else:
        path = tmp_path / "faq.en.txt"
        path.write_text(FAQ, encoding="utf-8")
    return path


def test_the_faq_is_read_into_sections() -> None:
    sections = read_faq(FAQ)
    assert [section.number for section in sections] == ["1.1", "1.2", "1.3", "2.1", "2.2"]
    first = sections[0]
    assert first.chapter == "Orders"
    assert first.heading == "How do I return an item I bought online?"
    assert first.body.startswith("Items can be sent back")  # dedented, heading left out
    assert "online?" not in first.body
    assert "* Express parcels" in sections[1].body
    assert [section.asks for section in sections] == [True, False, True, True, True]


def test_the_corpus_holds_answers_only_and_questions_with_their_gold(tmp_path: Path) -> None:
    corpus = load_corpus(_write(tmp_path))
    assert corpus.documents == 5
    assert [q.number for q in corpus.questions] == ["1.1", "1.3", "2.1", "2.2"]
    assert corpus.questions[0].gold_document_id == "faq-1.1"
    for chunk in corpus.chunks:
        assert chunk.item.title in ("Orders", "Accounts")
        assert "How do I" not in chunk.item.text and "?" not in chunk.item.text
        assert chunk.item.terms  # matched by title and text, as the cache matches them
    # A cross-reference keeps its number and loses the heading it quoted.
    closing = [chunk.item.text for chunk in corpus.chunks if chunk.item.document_id == "faq-2.2"]
    assert closing == [
        "Write to support and we erase your account and its orders within a month. Items "
        "bought before stay yours: see Section 1.1."
    ]
    audiences = {chunk.item.document_id: chunk.audience for chunk in corpus.chunks}
    assert audiences["faq-2.1"] is Audience.VERIFIED
    assert [a for a in audiences.values()].count(Audience.VERIFIED) == 1
    # The uncompressed text reads alike.
    assert load_corpus(_write(tmp_path, compressed=False)).chunks == corpus.chunks


def test_a_missing_corpus_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(CorpusMissing, match="apt-get download debian-faq"):
        load_corpus(tmp_path / "absent.txt.gz")


async def test_lexical_and_hybrid_slices_with_citations_and_audiences(tmp_path: Path) -> None:
    corpus = load_corpus(_write(tmp_path))
    counter = TiktokenCounter(load_encoding())
    embedder = DiskCachedEmbedder(ConceptEmbedder(), tmp_path / "vectors")
    outcomes = await evaluate_knowledge(
        corpus, counter, methods=(LEXICAL, HYBRID), embedder=embedder
    )
    await embedder.close()
    by = {(o.method, o.question): o for o in outcomes}
    assert len(outcomes) == 8
    # "password" is in the answer: found lexically, ranked first.
    assert by[LEXICAL, "2.1"].hit and by[LEXICAL, "2.1"].rank == 1
    # "pets" shares no word with "Dogs … greyhound": only the meaning finds it.
    assert not by[LEXICAL, "1.3"].hit and by[LEXICAL, "1.3"].rank is None
    assert by[HYBRID, "1.3"].hit
    for outcome in outcomes:
        assert outcome.tokens <= knowledge_budget()
        assert outcome.citation.forged_dropped
        assert outcome.anonymous_leaks == 0
        if outcome.hit:
            assert outcome.citation.gold and outcome.citation.right_document
    # The verified answer reached the verified customer, never the anonymous visitor.
    assert by[LEXICAL, "2.1"].verified_lines >= 1

    figures = knowledge_figures(LEXICAL, outcomes)
    hits = sum(by[LEXICAL, q].hit for q in ("1.1", "1.3", "2.1", "2.2"))
    assert figures.questions == 4 and figures.hit_rate == round(hits / 4, 3)
    assert figures.forged_dropped == 1.0 and figures.anonymous_leaks == 0
    assert knowledge_figures(HYBRID, outcomes).hit_rate > figures.hit_rate


def _outcome(rank: int | None, *, hit: bool, citation: Citation) -> KnowledgeOutcome:
    return KnowledgeOutcome(LEXICAL, "1.1", hit, rank, 2, 100, citation, 0, 0)


def test_figures_count_ranks_and_citations() -> None:
    right = Citation(cited=1, right_document=True, gold=True, forged_dropped=True)
    wrong = Citation(cited=2, right_document=False, gold=False, forged_dropped=False)
    none = Citation(cited=None, right_document=False, gold=False, forged_dropped=True)
    outcomes = [
        _outcome(1, hit=True, citation=right),
        _outcome(4, hit=True, citation=wrong),
        _outcome(None, hit=False, citation=none),
        _outcome(2, hit=False, citation=right),
    ]
    figures = knowledge_figures(LEXICAL, outcomes)
    assert figures.hit_rate == 0.5 and figures.hit_at_1 == 0.25
    assert figures.mrr == round((1 + 1 / 4 + 1 / 2) / 4, 3)
    assert figures.citations == 3 and figures.citations_right == round(2 / 3, 3)
    assert figures.gold_cited == 0.5 and figures.forged_dropped == 0.75


def test_a_simulated_reply_resolves_its_line_and_drops_the_forged_number() -> None:
    day = date(2021, 1, 1)
    refs = (
        KnowledgeRef(1, "faq-1.2", "Orders", None, day),
        KnowledgeRef(2, "faq-1.1", "Orders", None, day),
    )
    assert cited_reply(refs, "faq-1.1") == Citation(2, True, True, True)
    # The gold is not in the window: the first line is cited, a right document but no gold.
    assert cited_reply(refs, "faq-9.9") == Citation(1, True, False, True)
    assert cited_reply((), "faq-1.1") == Citation(None, False, False, True)


def test_the_command_prints_both_rankings_and_reuses_its_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = _write(tmp_path)
    cache = tmp_path / "vectors"
    args = ["eval", "knowledge", "--corpus", str(corpus), "--embedding-cache", str(cache)]
    assert main([*args, "--json"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("knowledge: faq.en.txt.gz: 5 documents")
    assert out[2].startswith("lexical") and out[3].startswith("hybrid")
    cold = json.loads(out[-1])
    assert [f["method"] for f in cold["figures"]] == ["lexical", "hybrid"]
    assert cold["embedding"]["computed"] > 0 and cold["budget"] == 600
    assert all(f["anonymous_leaks"] == 0 for f in cold["figures"])

    # A second run reads every vector from the disk and gives the same figures.
    assert main([*args, "--json"]) == 0
    warm = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert warm["embedding"]["computed"] == 0 and warm["embedding"]["cached"] > 0
    assert warm["figures"] == cold["figures"]


def test_the_command_lexical_only_and_a_missing_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "knowledge", "--corpus", str(_write(tmp_path)), "--mode", "lexical"])
    table = capsys.readouterr().out
    assert code == 0 and "lexical" in table and "hybrid" not in table
    assert "vectors" not in table
    assert main(["eval", "knowledge", "--corpus", str(tmp_path / "nowhere.gz")]) == 2
    assert "no FAQ at" in capsys.readouterr().err


def test_the_report_table_names_the_budget(tmp_path: Path) -> None:
    corpus = load_corpus(_write(tmp_path))
    report = summarize_knowledge(corpus, (), methods=(LEXICAL,), budget=600, seconds=1.0)
    assert "slice of 600 tokens" in report.table()
    assert report.figures[0].questions == 0
