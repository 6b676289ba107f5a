"""HTML read into chunks: what is not content dropped, headings and their paths, the title,
entities, lists and tables, and the encoding taken from the bytes."""

from __future__ import annotations

import pytest

from gateway.knowledge.chunking import MAX_CHUNK_CHARS
from gateway.knowledge.parsing import MAX_TITLE_CHARS, DocumentUnreadable, parse_document

PAGE = """<!doctype html>
<html><head>
<meta charset="utf-8"><title>  Returns &amp; refunds
 | Acme Help</title>
<style>h1 { color: red } .secret { display: none }</style>
<script>document.write("<h1>Injected</h1><p>from script</p>")</script>
</head><body>
<header><a href="/">Acme</a><h1>Site banner</h1></header>
<nav><ul><li>Home</li><li>Orders</li></ul></nav>
<main><article>
  <header><h1>Returns</h1><p>Updated 2 March 2026</p></header>
  <p>Send it back within
     <b>30 days</b>&nbsp;&mdash; no questions.</p>
  <h2>How</h2>
  <ol><li>Print the label</li><li><p>Pack it</p><p>in the original box</p></li></ol>
  <h3>Costs</h3>
  <table><tr><th>Plan</th><th>Fee</th></tr><tr><td>Basic</td><td>&euro;5</td></tr></table>
  <h2>Refunds</h2>
  <div>Five days &lt;usually&gt;.<br>Ten at most.</div>
  <p hidden>internal note</p>
  <aside>Related articles</aside>
  <noscript>Enable JavaScript</noscript>
  <template><p>template text</p></template>
</article></main>
<footer>&copy; Acme</footer>
</body></html>
"""


def parse(
    body: bytes, fallback: str = "page.html"
) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    doc = parse_document(body, "html", fallback_title=fallback)
    return doc.title, [(chunk.headings, chunk.text) for chunk in doc.chunks]


def test_a_page_becomes_chunks_under_its_headings() -> None:
    title, chunks = parse(PAGE.encode())

    assert title == "Returns & refunds | Acme Help"
    assert chunks == [
        (("Returns",), "Updated 2 March 2026\n\nSend it back within 30 days \u2014 no questions."),
        (("Returns", "How"), "- Print the label\n- Pack it\nin the original box"),
        (("Returns", "How", "Costs"), "Plan | Fee\nBasic | \u20ac5"),
        (("Returns", "Refunds"), "Five days <usually>.\nTen at most."),
    ]


def test_scripts_styles_navigation_and_the_site_frame_are_dropped() -> None:
    _, chunks = parse(PAGE.encode())
    everything = " ".join(text + " ".join(headings) for headings, text in chunks)

    for dropped in (
        "Injected", "from script", "color", "Site banner", "Home", "Orders", "internal note",
        "Related", "JavaScript", "template text", "Acme",
    ):  # fmt: skip
        assert dropped not in everything


def test_parts_marked_by_roles_or_hidden_from_readers_are_dropped() -> None:
    body = b"""
    <div role="banner">Acme logo</div><div role="navigation"><a>Home</a></div>
    <div role="main"><p>Kept text.</p><span aria-hidden="true">icon-x</span>
    <button>Was this helpful?</button><select><option>English</option></select>
    <div style="DISPLAY: none">Coupon STAFF50</div><p style="visibility:hidden">x</p>
    <form><p>Also kept.</p></form></div>
    <div role="contentinfo">Imprint</div>
    """

    assert parse(body)[1] == [((), "Kept text.\n\nAlso kept.")]


def test_the_first_h1_is_the_title_without_a_title_element() -> None:
    title, chunks = parse(b"<h1>Opening <em>hours</em></h1><p>Nine to five.</p>")

    assert title == "Opening hours"
    assert chunks == [(("Opening hours",), "Nine to five.")]


def test_a_very_long_title_is_cut_at_a_word() -> None:
    title, _ = parse(f"<title>{'Returns and refunds ' * 30}</title><p>Body.</p>".encode())

    assert len(title) <= MAX_TITLE_CHARS + 1
    assert title == ("Returns and refunds " * 10).strip() + "\u2026"


def test_the_title_falls_back_without_title_or_h1() -> None:
    title, chunks = parse(b"<h2>Hours</h2><p>Nine.</p><title>   </title>", fallback="hours.html")

    assert title == "hours.html"
    assert chunks == [(("Hours",), "Nine.")]


def test_pre_keeps_its_lines_and_spaces() -> None:
    _, chunks = parse(b"<p>Run:</p><pre>\n  pip   install relay\n  relay &gt; out\n</pre>")

    assert chunks == [((), "Run:\n\n  pip   install relay\n  relay > out")]


def test_the_meta_charset_decides_the_encoding() -> None:
    body = '<meta charset="windows-1252"><title>Preços</title><p>Ação já</p>'.encode("cp1252")

    assert parse(body) == ("Preços", [((), "Ação já")])


def test_the_http_equiv_charset_and_a_bom_are_read() -> None:
    meta = '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
    assert parse((meta + "<p>Olá</p>").encode("latin-1"))[1] == [((), "Olá")]
    assert parse("<p>Olá</p>".encode("utf-16"))[1] == [((), "Olá")]


def test_without_a_charset_utf8_is_read_with_replacement() -> None:
    assert parse(b"<p>Ol\xc3\xa1 \xff</p>")[1] == [((), "Olá \ufffd")]


def test_a_long_section_is_split_within_the_bound() -> None:
    paragraphs = "".join(f"<p>Paragraph {n} " + "word " * 80 + "</p>" for n in range(10))
    _, chunks = parse(f"<h1>Long</h1>{paragraphs}".encode())

    assert len(chunks) > 1
    assert all(len(text) <= MAX_CHUNK_CHARS for _, text in chunks)
    assert sum(text.count("Paragraph") for _, text in chunks) == 10


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><head><title>Empty</title></head><body><nav>Menu</nav></body></html>", "no text"),
        (b"<script>only()</script>", "no text"),
        (b"\x00\x01\x02\x03<html>", "binary data, not HTML"),
    ],
)
def test_a_page_without_text_is_refused(body: bytes, reason: str) -> None:
    with pytest.raises(DocumentUnreadable, match=reason):
        parse(body)
