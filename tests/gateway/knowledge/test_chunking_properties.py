"""Properties of chunking over generated Markdown and HTML: no chunk passes the bound, and
the prose and code come out whole, every word once and in order."""

from __future__ import annotations

import html

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.knowledge.chunking import MAX_CHUNK_CHARS
from gateway.knowledge.parsing import parse_document

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzçã", min_size=1, max_size=18)
CODE_WORDS = st.text(alphabet="ABCDEFXYZ_=()", min_size=1, max_size=12)


@st.composite
def paragraph(draw: st.DrawFn) -> tuple[str, list[str]]:
    words = draw(st.lists(WORDS, min_size=1, max_size=400))
    # Wrapped at random widths, with stray spaces, as people write.
    lines: list[str] = []
    rest = list(words)
    while rest:
        take = draw(st.integers(min_value=1, max_value=15))
        spaces = " " * draw(st.integers(min_value=1, max_value=3))
        lines.append(spaces.join(rest[:take]))
        rest = rest[take:]
    ending = "." if draw(st.booleans()) else ""
    return "\n".join(lines) + ending, words[:-1] + [words[-1] + ending]


@st.composite
def heading(draw: st.DrawFn) -> tuple[str, list[str]]:
    level = draw(st.integers(min_value=1, max_value=6))
    words = draw(st.lists(WORDS, min_size=1, max_size=6))
    return "#" * level + " " + " ".join(words), []


@st.composite
def code_block(draw: st.DrawFn) -> tuple[str, list[str]]:
    # Lines that would be headings outside the fence; they must stay code.
    lines = draw(st.lists(st.lists(CODE_WORDS, min_size=1, max_size=8), min_size=1, max_size=60))
    body = ["# " + " ".join(words) for words in lines]
    words = ["```"] + [w for line in lines for w in ["#", *line]] + ["```"]
    return "```\n" + "\n".join(body) + "\n```", words


BLOCKS = st.lists(st.one_of(paragraph(), heading(), code_block()), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(BLOCKS)
def test_chunks_keep_within_the_bound_and_hold_every_word_in_order(
    blocks: list[tuple[str, list[str]]],
) -> None:
    expected = [word for _, words in blocks for word in words]
    if not expected:
        return
    text = "\n\n".join(source for source, _ in blocks) + "\n"

    doc = parse_document(text.encode(), "markdown", fallback_title="doc.md")

    assert all(0 < len(chunk.text) <= MAX_CHUNK_CHARS for chunk in doc.chunks)
    assert [word for chunk in doc.chunks for word in chunk.text.split()] == expected
    code_words = {w for source, words in blocks if source.startswith("```") for w in words}
    assert not any(code_words & set(" ".join(chunk.headings).split()) for chunk in doc.chunks)


HTML_WORDS = st.text(alphabet="abcxyzçã&<>\"'", min_size=1, max_size=12)


@st.composite
def html_block(draw: st.DrawFn) -> tuple[str, list[str]]:
    words = draw(st.lists(HTML_WORDS, min_size=1, max_size=300))
    tag = draw(st.sampled_from(["p", "div", "li", "h2", "h3", "blockquote", "td"]))
    inner = " ".join(
        f"<b>{html.escape(word)}</b>" if index % 7 == 3 else html.escape(word)
        for index, word in enumerate(words)
    )
    return f"<{tag}>{inner}</{tag}>", [] if tag.startswith("h") else words


@settings(max_examples=100, deadline=None)
@given(st.lists(html_block(), min_size=1, max_size=15))
def test_html_chunks_keep_within_the_bound_and_hold_every_word_in_order(
    blocks: list[tuple[str, list[str]]],
) -> None:
    expected = [word for _, words in blocks for word in words]
    if not expected:
        return
    body = "<html><body><main>" + "\n".join(source for source, _ in blocks) + "</main></body>"

    doc = parse_document(body.encode(), "html", fallback_title="page.html")

    assert all(0 < len(chunk.text) <= MAX_CHUNK_CHARS for chunk in doc.chunks)
    # List markers and cell separators are the only words the reader adds.
    assert [w for c in doc.chunks for w in c.text.split() if w not in ("-", "|")] == expected
