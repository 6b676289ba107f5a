"""Plain text read into paragraphs, its title line, encodings, and `format_of`."""

from __future__ import annotations

import pytest

from gateway.knowledge.parsing import DocumentUnreadable, format_of, parse_document


def parse(body: bytes, fallback: str = "notes.txt") -> tuple[str, list[str]]:
    doc = parse_document(body, "text", fallback_title=fallback)
    assert all(chunk.headings == () for chunk in doc.chunks)
    return doc.title, [chunk.text for chunk in doc.chunks]


def test_a_short_first_line_standing_alone_is_the_title() -> None:
    title, texts = parse(b"Shipping policy\n\nWe ship\n   every weekday.\n\nNot on holidays.\n")

    assert title == "Shipping policy"
    assert texts == ["We ship every weekday.\n\nNot on holidays."]


@pytest.mark.parametrize(
    "body",
    [
        b"Thanks for writing.\n\nWe ship daily.\n",  # a sentence, not a title
        b"Shipping policy\nWe ship daily.\n",  # no blank line after it
        b"Shipping policy\n\n\n",  # nothing after it: it is the text
        b"A" * 81 + b"\n\nWe ship daily.\n",  # too long
    ],
)
def test_otherwise_the_title_falls_back(body: bytes) -> None:
    title, texts = parse(body)

    assert title == "notes.txt"
    assert texts[0].startswith(body.split(b"\n")[0].decode()[:20])


def test_byte_order_marks_and_windows_1252_are_read() -> None:
    assert parse("Preço\n\nÀ vista.".encode("utf-16"))[1] == ["À vista."]
    assert parse(b"\xef\xbb\xbfCaf\xc3\xa9\n\nOl\xc3\xa1.")[0] == "Café"
    assert parse("Promoção\n\nSó hoje.".encode("cp1252"))[0] == "Promoção"


def test_invalid_utf8_bytes_become_replacement_characters() -> None:
    assert parse(b"Ol\xc3\xa1 \xff fim")[1] == ["Olá \ufffd fim"]


def test_binary_and_empty_bodies_are_refused() -> None:
    with pytest.raises(DocumentUnreadable, match=r"binary data.*looks like a PDF"):
        parse(b"%PDF-1.7\n\x00\x01\x02stream")
    with pytest.raises(DocumentUnreadable, match="plain text document has no text"):
        parse(b"\n \n\t\n")


@pytest.mark.parametrize(
    ("content_type", "filename", "expected"),
    [
        ("text/markdown; charset=utf-8", None, "markdown"),
        ("TEXT/HTML", "x.pdf", "html"),
        ("application/xhtml+xml", None, "html"),
        ("application/pdf", None, "pdf"),
        ("text/plain;charset=latin-1", "readme", "text"),
        ("text/plain", "guide.md", "markdown"),  # clients send text/plain for any text file
        ("text/plain", "page.HTM", "html"),
        ("application/octet-stream", "manual.PDF", "pdf"),
        (None, "notes.txt", "text"),
        (None, "a.b.markdown", "markdown"),
        ("image/png", "photo.png", None),
        (None, "Makefile", None),
        (None, None, None),
        ("", "", None),
    ],
)
def test_format_of_reads_the_content_type_then_the_extension(
    content_type: str | None, filename: str | None, expected: str | None
) -> None:
    assert format_of(content_type, filename) == expected
