"""The media marker of a model's reply: taken out of the text, its URL attached."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context.reply_attachments import (
    MAX_ATTACHMENTS,
    ReplyAttachment,
    attachment_host,
    listed_attachments,
    shown_while_written,
    split_attachments,
)


def test_a_marker_line_becomes_an_attachment_and_leaves_the_text() -> None:
    text, found = split_attachments(
        "Aqui está o catálogo de verão.\n[[media: https://cdn.example.org/catalogo.pdf | Catálogo]]"
    )
    assert text == "Aqui está o catálogo de verão."
    assert found == (
        ReplyAttachment("https://cdn.example.org/catalogo.pdf", "Catálogo", "application/pdf"),
    )


def test_markers_inside_a_sentence_and_without_caption() -> None:
    text, found = split_attachments(
        "Veja [[media: https://cdn.example.org/a.jpg]] e também [[ media:http://x.example/b ]] ok"
    )
    assert text == "Veja e também ok"
    assert [(a.url, a.caption, a.content_type) for a in found] == [
        ("https://cdn.example.org/a.jpg", None, "image/jpeg"),
        ("http://x.example/b", None, None),
    ]


def test_only_http_urls_count_and_others_stay_as_written() -> None:
    reply = "Arquivo: [[media: file:///etc/passwd | x]] [[media: javascript:alert(1)]]"
    assert split_attachments(reply) == (reply, ())


def test_a_reply_of_only_a_marker_has_no_text_left() -> None:
    assert split_attachments("[[media: https://cdn.example.org/a.png]]")[0] == ""


def test_at_most_ten_attachments() -> None:
    reply = " ".join(f"[[media: https://cdn.example.org/{i}.png]]" for i in range(12))
    text, found = split_attachments(reply)
    assert len(found) == MAX_ATTACHMENTS
    assert text.count("[[media:") == 2


@given(st.text())
def test_text_without_markers_is_unchanged(text: str) -> None:
    if "[[" not in text:
        assert split_attachments(text) == (text, ())


def test_a_streamed_reply_never_shows_a_marker_being_written() -> None:
    whole = "Segue o catálogo. [[media: https://cdn.example.org/c.pdf | Catálogo]] Até mais"
    shown = [shown_while_written(whole[:end]) for end in range(len(whole) + 1)]
    assert not any("[[" in text or "media:" in text for text in shown)
    assert shown[whole.index("[[") + 1] == "Segue o catálogo."
    assert shown[-1] == "Segue o catálogo. Até mais"
    assert shown_while_written("lista [1] e [a]") == "lista [1] e [a]"


def test_only_attachments_on_listed_hosts_are_kept() -> None:
    _, found = split_attachments(
        "[[media: https://cdn.shop.example/a.pdf]] [[media: http://127.0.0.1:8080/secret]] "
        "[[media: https://shop.example/b.png]] [[media: https://cdn.shop.example@10.0.0.1/c]] "
        "[[media: https://cdn.shop.example\\@evil.example/d]]"
    )
    kept, dropped = listed_attachments(found, ["*.shop.example"])
    assert [a.url for a in kept] == ["https://cdn.shop.example/a.pdf"]
    assert len(dropped) == 4
    # Nothing is listed by default: every marker is dropped.
    assert listed_attachments(found, []) == ((), found)


def test_a_host_parsers_may_read_apart_is_no_host() -> None:
    assert attachment_host("https://cdn.example.org/a.pdf") == "cdn.example.org"
    assert attachment_host("https://cdn.example.org@10.0.0.1/a.pdf") is None
    assert attachment_host("https://cdn.example.org\\@10.0.0.1/a.pdf") is None
