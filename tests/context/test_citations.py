"""A reply's knowledge citations: numbers not in the window dropped, URLs the model wrote
removed, the documents cited renumbered in order of first use."""

from __future__ import annotations

import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.citation_render import CitationStyle, citation_style, render_cited_reply
from context.citations import CitedSource, cited_while_written, resolve_citations
from context.knowledge_refs import KnowledgeRef

RETURNS = KnowledgeRef(
    1, "doc-returns", "Trocas e devoluções", "https://help.loja.com.br/trocas", date(2026, 11, 2)
)
SHIPPING = KnowledgeRef(2, "doc-shipping", "Frete", None, date(2026, 10, 1))
RETURNS_AGAIN = KnowledgeRef(
    3, "doc-returns", "Trocas e devoluções", "https://help.loja.com.br/trocas", date(2026, 11, 2)
)
REFS = (RETURNS, SHIPPING, RETURNS_AGAIN)


def test_a_known_number_is_renumbered_and_its_document_listed() -> None:
    cited = resolve_citations("Você tem 30 dias para trocar [k1].", REFS)
    assert cited.text == "Você tem 30 dias para trocar [1]."
    assert cited.sources == (
        CitedSource(1, "doc-returns", "Trocas e devoluções", "https://help.loja.com.br/trocas"),
    )
    assert (cited.dropped_markers, cited.removed_urls) == (0, 0)


def test_a_forged_number_is_dropped_and_the_text_stays_readable() -> None:
    cited = resolve_citations("O frete é grátis [k9]. Trocas em 30 dias [k7], sem custo.", REFS)
    assert cited.text == "O frete é grátis. Trocas em 30 dias, sem custo."
    assert cited.sources == ()
    assert cited.dropped_markers == 2


def test_known_and_forged_numbers_mixed() -> None:
    cited = resolve_citations("Frete [k2] e trocas [k1, k8] e garantia [k5].", REFS)
    assert cited.text == "Frete [1] e trocas [2] e garantia."
    assert [s.document_id for s in cited.sources] == ["doc-shipping", "doc-returns"]
    assert cited.dropped_markers == 2


@pytest.mark.parametrize(
    "written",
    ["[K1]", "[k 1]", "【k1】", "［k1］", "[ k1 ]", "[k1](https://help.loja.com.br/x)"],
)
def test_the_forms_models_write_a_marker_in(written: str) -> None:
    cited = resolve_citations(f"Prazo de 30 dias {written}.", REFS)
    assert cited.text == "Prazo de 30 dias [1]."
    assert [s.document_id for s in cited.sources] == ["doc-returns"]


def test_a_bare_number_is_dropped_even_when_the_window_has_it() -> None:
    # An earlier reply's `[1]` is in the history: a bare number may name another document.
    cited = resolve_citations("Prazo de 30 dias [1], frete [2] [k2].", REFS)
    assert cited.text == "Prazo de 30 dias, frete [1]."
    assert [s.document_id for s in cited.sources] == ["doc-shipping"]
    assert cited.dropped_markers == 2


def test_grouped_and_adjacent_markers_cite_each_document_once() -> None:
    cited = resolve_citations("Veja [k2, k1] e também [k1][k3] e [k2; k9].", REFS)
    # k1 and k3 are lines of one document: one source, one marker.
    assert cited.text == "Veja [1][2] e também [2] e [1]."
    assert [s.number for s in cited.sources] == [1, 2]
    assert [s.document_id for s in cited.sources] == ["doc-shipping", "doc-returns"]
    assert cited.dropped_markers == 1


def test_numbers_follow_the_order_of_first_citation_not_the_window() -> None:
    cited = resolve_citations("Frete [k2]. Trocas [k3]. Frete de novo [k2].", REFS)
    assert cited.text == "Frete [1]. Trocas [2]. Frete de novo [1]."
    assert [s.title for s in cited.sources] == ["Frete", "Trocas e devoluções"]


def test_a_marker_the_model_lists_its_sources_with_stays_a_marker() -> None:
    cited = resolve_citations("Trocas em 30 dias [k1].\n\n[k1]: Trocas e devoluções", REFS)
    assert cited.text == "Trocas em 30 dias [1].\n\n[1]: Trocas e devoluções"
    assert cited.removed_urls == 0


def test_a_marker_at_a_line_start_leaves_no_leading_space() -> None:
    cited = resolve_citations("[k9] Trocas em 30 dias.\n- [k8] item", REFS)
    assert cited.text == "Trocas em 30 dias.\n- item"


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Veja https://evil.example.com/trocas?x=1 hoje.", "Veja hoje."),
        ("Acesse http://evil.example.com.", "Acesse."),
        ("Acesse HTTPS://EVIL.EXAMPLE.COM/A, depois volte.", "Acesse, depois volte."),
        ("Site: www.evil-site.com.br!", "Site:!"),
        ("Em loja-falsa.com/trocas tem tudo.", "Em tem tudo."),
        ("Em loja-falsa.com.br tem tudo.", "Em tem tudo."),
        ("Em <https://evil.example.com/a> tem tudo.", "Em tem tudo."),
        ("Em ftp://files.example.org/a.pdf tem tudo.", "Em tem tudo."),
        ("Veja (https://evil.example.com/a).", "Veja."),
        ("Veja “https://evil.example.com/a”… e www.evil.com。", "Veja… e。"),
        ("Veja **https://evil.example.com/a** agora.", "Veja agora."),
        ("Veja https://pt.wikipedia.org/wiki/Troca_(comércio), ok.", "Veja, ok."),
        ("Links:\n- https://a.example.com\n- https://b.example.com\n\nFim.", "Links:\n\nFim."),
        ("Veja [aqui][1].\n\n[1]: https://evil.example.com/a", "Veja aqui."),
    ],
)
def test_every_url_the_model_wrote_is_removed(written: str, expected: str) -> None:
    cited = resolve_citations(written, REFS)
    assert cited.text == expected
    assert cited.removed_urls >= 1


def test_a_markdown_link_keeps_its_text_and_loses_its_url() -> None:
    cited = resolve_citations(
        'Leia [a política de trocas](https://evil.example.com/p "Política") e a '
        "![tabela](https://cdn.example.com/t.png) [k1].",
        REFS,
    )
    assert cited.text == "Leia a política de trocas e a tabela [1]."
    assert cited.removed_urls == 2


@pytest.mark.parametrize(
    "kept",
    [
        "Escreva para vendas@loja.com.br ou suporte.sac@loja.com.",
        "Custa 4.5 ou R$ 4,50, de 10:30 às 18:00, versão 2.1.3.",
        "Funciona com Node.js e ASP.NET; baixe manual.pdf (3.5kg, e.g. o modelo X).",
        "Ano [2026], opção [a], nota 9.5/10.",
    ],
)
def test_what_is_not_a_url_is_kept(kept: str) -> None:
    cited = resolve_citations(kept, REFS)
    assert cited.text == kept
    assert (cited.dropped_markers, cited.removed_urls) == (0, 0)


def test_a_reply_without_markers_or_urls_is_unchanged_byte_for_byte() -> None:
    text = "  Olá!\n\nSeu pedido  saiu hoje.  "
    assert resolve_citations(text, REFS).text == text


# --- rendering per channel --------------------------------------------------------------

CITED = resolve_citations("Trocas em 30 dias [k1]; frete grátis [k2].", REFS)


def test_whatsapp_and_telegram_list_the_sources_after_the_text() -> None:
    for channel in ("whatsapp", "whatsapp_cloud", "telegram"):
        rendered = render_cited_reply(CITED, citation_style(channel), "pt")
        assert rendered.text == (
            "Trocas em 30 dias [1]; frete grátis [2].\n\n"
            "Fontes:\n"
            "[1] Trocas e devoluções — https://help.loja.com.br/trocas\n"
            "[2] Frete"
        )
        assert rendered.links == ()


@pytest.mark.parametrize(
    ("language", "header"), [("en", "Sources:"), ("es", "Fuentes:"), (None, "Fontes / Sources:")]
)
def test_the_sources_header_follows_the_reply_language(language: str | None, header: str) -> None:
    rendered = render_cited_reply(CITED, "listed", language)
    assert f"\n\n{header}\n[1] " in rendered.text


def test_web_chat_keeps_the_markers_and_gets_the_sources_apart() -> None:
    rendered = render_cited_reply(CITED, citation_style("webchat"), "pt")
    assert rendered.text == "Trocas em 30 dias [1]; frete grátis [2]."
    assert [(s.number, s.title, s.url) for s in rendered.links] == [
        (1, "Trocas e devoluções", "https://help.loja.com.br/trocas"),
        (2, "Frete", None),
    ]


def test_a_phone_call_speaks_the_reply_without_markers_or_links() -> None:
    rendered = render_cited_reply(CITED, citation_style("phone"), "pt")
    assert rendered == render_cited_reply(CITED, "spoken", "pt")
    assert rendered.text == "Trocas em 30 dias; frete grátis."
    assert rendered.links == ()


def test_a_reply_citing_nothing_gets_no_sources_list() -> None:
    cited = resolve_citations("Olá [k9]!", REFS)
    assert render_cited_reply(cited, "listed", "pt").text == "Olá!"


def test_a_title_on_several_lines_is_listed_on_one() -> None:
    ref = KnowledgeRef(1, "d", "Guia\n  de   uso", "https://help.example.com/guia", None)
    rendered = render_cited_reply(resolve_citations("Veja [k1].", (ref,)), "listed", "en")
    assert rendered.text.endswith("Sources:\n[1] Guia de uso — https://help.example.com/guia")


# --- properties -------------------------------------------------------------------------

_WORDS = ["Olá", "trocas", "pedido", "frete", "hoje", "é", "grátis", "sim", "não", "ok"]
_KEPT = ["vendas@loja.com.br", "4.5", "10:30", "Node.js", "manual.pdf", "R$ 4,50", "[2026]"]
_URLS = [
    "https://evil.example.com/a?b=c",
    "http://evil.example.com",
    "HTTP://EVIL.EXAMPLE.COM/X",
    "www.evil-site.com.br/promo",
    "evil-site.com/promo",
    "evil-site.com.br",
    "<https://evil.example.com/a>",
    "(https://evil.example.com/a)",
    "[clique aqui](https://evil.example.com/a)",
    "![foto](http://evil.example.com/f.png)",
    "**https://evil.example.com/a**",
]
_PUNCTUATION = [".", ",", "!", "?", ":"]
_STYLES: tuple[CitationStyle, ...] = ("listed", "apart", "spoken")


def _marker(numbers: list[int], form: int) -> str:
    if form == 0:
        return "".join(f"[k{n}]" for n in numbers)
    if form == 1:
        return "[" + ", ".join(f"k{n}" for n in numbers) + "]"
    if form == 2:
        return "".join(f"【K{n}】" for n in numbers)
    if form == 3:
        return "".join(f"[k {n}]" for n in numbers)
    return "".join(f"[{n}]" for n in numbers)  # bare: dropped, cites nothing


_markers = st.builds(
    _marker, st.lists(st.integers(0, 12), min_size=1, max_size=3), st.integers(0, 4)
)
_fragments = st.one_of(
    st.sampled_from(_WORDS), st.sampled_from(_KEPT), st.sampled_from(_URLS),
    st.sampled_from(_PUNCTUATION), _markers,
)  # fmt: skip
_refs = st.lists(
    st.builds(
        KnowledgeRef,
        number=st.integers(1, 8),
        document_id=st.sampled_from(["d1", "d2", "d3", "d4"]),
        title=st.sampled_from(["Trocas", "Frete", "Garantia"]),
        url=st.sampled_from([None, "https://help.loja.com.br/a", "http://docs.example.org/b"]),
        updated_at=st.none(),
    ),
    max_size=6,
    unique_by=lambda ref: ref.number,
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_fragments, st.sampled_from([" ", "\n", ", ", " - ", ""])), max_size=25),
    _refs,
    st.sampled_from(_STYLES),
)
def test_no_link_but_a_sources_and_no_marker_but_a_listed_source(
    parts: list[tuple[str, str]], refs: list[KnowledgeRef], style: CitationStyle
) -> None:
    text = "".join(fragment + separator for fragment, separator in parts)
    cited = resolve_citations(text, refs)
    assert "http" not in cited.text.lower()
    assert "www." not in cited.text
    assert "  " not in cited.text  # the fragments and separators hold none; no gap leaves one
    numbers = {int(n) for n in re.findall(r"\[(\d{1,3})\]", cited.text)}
    assert numbers <= {source.number for source in cited.sources}
    assert [source.number for source in cited.sources] == list(range(1, len(cited.sources) + 1))
    # Each document cited in the reply, by a number the window held, is a source; no other.
    by_number = {ref.number: ref.document_id for ref in refs}
    written = {
        int(n)
        for fragment, _ in parts
        if fragment.startswith(("[k", "[K", "【"))
        for n in re.findall(r"\d+", fragment)
    }
    assert {s.document_id for s in cited.sources} == {
        by_number[n] for n in written if n in by_number
    }
    if all(separator for _, separator in parts):  # glued, a word and a bare domain are one
        assert "evil" not in cited.text
        for kept in _KEPT:
            assert cited.text.count(kept) == text.count(kept)
    rendered = render_cited_reply(cited, style, "pt")
    remainder = rendered.text
    for source in cited.sources:
        if source.url:
            remainder = remainder.replace(source.url, "")
    assert "http" not in remainder.lower()


def test_a_streamed_reply_holds_back_what_may_still_become_a_marker_or_a_url() -> None:
    assert cited_while_written("Troca em 30 dias [k1, k", REFS) == "Troca em 30 dias "
    assert cited_while_written("Troca em 30 dias [k1, k3] e", REFS) == "Troca em 30 dias [1] "
    assert cited_while_written("Veja https://evil.exa", REFS) == "Veja "
    assert cited_while_written("Leia [a política](https://ev", REFS) == "Leia "


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(_fragments, st.sampled_from([" ", "\n", ", ", ""])), max_size=12),
    _refs,
)
def test_every_view_of_a_streamed_reply_is_safe_and_numbered_as_the_final_one(
    parts: list[tuple[str, str]], refs: list[KnowledgeRef]
) -> None:
    text = "".join(fragment + separator for fragment, separator in parts)
    final = resolve_citations(text, refs)
    for end in range(len(text) + 1):
        shown = cited_while_written(text[:end], refs)
        assert "http" not in shown.lower()
        assert "www." not in shown
        assert "[k" not in shown
        # Numbered by first citation: a number shown is the final reply's number for it.
        for number in re.findall(r"\[(\d{1,3})\]", shown):
            assert int(number) <= len(final.sources)
