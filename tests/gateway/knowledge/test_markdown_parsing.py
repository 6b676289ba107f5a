"""Markdown read into chunks: headings and their paths, the title, code fences, and long
sections split at paragraph ends within the bound."""

from __future__ import annotations

import pytest

from gateway.knowledge.chunking import MAX_CHUNK_CHARS
from gateway.knowledge.parsing import DocumentUnreadable, parse_document

GUIDE = """\
Read this first.

# Returns guide

How returns work.

## Shipping back ##

Print the label
and   drop the parcel at any post office.

### Fees

Free within 30 days.

## Refunds

Refunds take five days.

# Second top

Last words.
"""


def parse(text: str, fallback: str = "returns.md") -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    doc = parse_document(text.encode(), "markdown", fallback_title=fallback)
    assert [chunk.position for chunk in doc.chunks] == list(range(len(doc.chunks)))
    return doc.title, [(chunk.headings, chunk.text) for chunk in doc.chunks]


def test_each_section_is_a_chunk_under_its_heading_path() -> None:
    title, chunks = parse(GUIDE)

    assert title == "Returns guide"
    assert chunks == [
        ((), "Read this first."),
        (("Returns guide",), "How returns work."),
        (
            ("Returns guide", "Shipping back"),
            "Print the label and drop the parcel at any post office.",
        ),
        (("Returns guide", "Shipping back", "Fees"), "Free within 30 days."),
        (("Returns guide", "Refunds"), "Refunds take five days."),
        (("Second top",), "Last words."),
    ]


def test_setext_headings_open_sections_too() -> None:
    title, chunks = parse("Store hours\n===========\n\nOpen at 9.\n\nSundays\n-------\nClosed.\n")

    assert title == "Store hours"
    assert chunks == [(("Store hours",), "Open at 9."), (("Store hours", "Sundays"), "Closed.")]


def test_a_horizontal_rule_after_a_blank_line_is_not_a_heading() -> None:
    _, chunks = parse("# Notes\n\nFirst part.\n\n---\n\nSecond part.\n")

    assert chunks == [(("Notes",), "First part.\n\nSecond part.")]


def test_a_list_above_a_rule_is_not_a_heading() -> None:
    _, chunks = parse("# Steps\n\n- one\n- two\n---\n\nAfter.\n")

    assert chunks == [(("Steps",), "- one\n- two\n\nAfter.")]


def test_the_title_falls_back_when_no_h1_exists() -> None:
    title, chunks = parse("## Only a subsection\n\nBody.\n", fallback="faq.md")

    assert title == "faq.md"
    assert chunks == [(("Only a subsection",), "Body.")]


def test_headings_lose_their_inline_markup() -> None:
    title, chunks = parse(
        "# The **`relay`** [CLI](https://x.example/cli)\n\n## snake_case _flags_\n\nOn.\n"
    )

    assert title == "The relay CLI"
    assert chunks == [(("The relay CLI", "snake_case flags"), "On.")]


def test_a_hash_without_a_space_is_text_not_a_heading() -> None:
    title, chunks = parse("#support is our channel\n\n####### seven is too many\n")

    assert title == "returns.md"
    assert chunks == [((), "#support is our channel\n\n####### seven is too many")]


def test_fenced_code_is_kept_whole_and_never_read_as_headings() -> None:
    text = (
        "# Setup\n\nRun:\n\n```bash\n# install it\npip   install relay\n\n    indented\n```\n\n"
        "~~~\n## still code\n~~~\n\nDone.\n"
    )
    title, chunks = parse(text)

    assert title == "Setup"
    assert chunks == [
        (
            ("Setup",),
            "Run:\n\n```bash\n# install it\npip   install relay\n\n    indented\n```\n\n"
            "~~~\n## still code\n~~~\n\nDone.",
        )
    ]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    _, chunks = parse("# A\n\n```\ncode\n# not a heading\n")

    assert chunks == [(("A",), "```\ncode\n# not a heading")]


def test_list_items_keep_their_lines() -> None:
    _, chunks = parse("# Pay\n\nWe take:\n\n- cards\n- bank\n  transfer\n1. first\n")

    assert chunks == [(("Pay",), "We take:\n\n- cards\n- bank transfer\n1. first")]


def test_a_heading_without_text_makes_no_chunk() -> None:
    _, chunks = parse("# Title\n\n## Empty\n\n## Full\n\nSomething.\n")

    assert chunks == [(("Title", "Full"), "Something.")]


def test_html_comments_are_dropped_even_across_lines() -> None:
    text = (
        "# Prices\n\nPlan A <!-- internal: margin 40% --> costs 5.\n\n"
        "<!--\nTODO staff discount code STAFF50\n\n# Not a heading\n-->\nPlan B costs 9.\n"
        "\n```html\n<!-- code keeps its comments -->\n```\n"
    )
    _, chunks = parse(text)

    assert chunks == [
        (
            ("Prices",),
            "Plan A costs 5.\n\nPlan B costs 9.\n\n```html\n<!-- code keeps its comments -->\n```",
        )
    ]


def test_tables_keep_their_rows_but_not_the_delimiter_row() -> None:
    _, chunks = parse("# Fees\n\n| Plan | Fee |\n|:-----|----:|\n| Basic | 5 |\n")

    assert chunks == [(("Fees",), "| Plan | Fee |\n| Basic | 5 |")]


def test_front_matter_is_dropped() -> None:
    title, chunks = parse("---\ntitle: Ignored\ntags: [a]\n---\n# Real\n\nBody.\n")

    assert (title, chunks) == ("Real", [(("Real",), "Body.")])


def test_a_long_section_is_split_at_paragraph_ends_within_the_bound() -> None:
    paragraphs = [f"Paragraph {n} " + " ".join(["word"] * 60) + "." for n in range(12)]
    _, chunks = parse("# Long\n\n" + "\n\n".join(paragraphs) + "\n")

    assert len(chunks) > 1
    assert all(len(text) <= MAX_CHUNK_CHARS for _, text in chunks)
    assert all(headings == ("Long",) for headings, _ in chunks)
    # Every chunk is whole paragraphs: no paragraph was cut.
    pieces = [piece for _, text in chunks for piece in text.split("\n\n")]
    assert pieces == paragraphs


def test_a_paragraph_longer_than_the_bound_is_cut_between_sentences_and_words() -> None:
    sentence = "The parcel goes back through the post office counter. "
    long_sentence = " ".join(f"w{n}" for n in range(500))
    _, chunks = parse("# Long\n\n" + sentence * 40 + long_sentence + "\n")

    texts = [text for _, text in chunks]
    assert all(len(text) <= MAX_CHUNK_CHARS for text in texts)
    assert all(text.endswith("counter.") for text in texts[:-2])
    assert " ".join(texts).split() == (sentence * 40 + long_sentence).split()


def test_an_empty_or_binary_body_is_refused_with_a_reason() -> None:
    with pytest.raises(DocumentUnreadable, match="no text"):
        parse_document(b"# Only a heading\n\n   \n", "markdown", fallback_title="x")
    with pytest.raises(DocumentUnreadable, match="binary"):
        parse_document(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "markdown", fallback_title="x")
