"""Any bytes, in any format, are either read or refused with `DocumentUnreadable`: no other
error escapes the readers, whatever an upload or a fetched page holds."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from gateway.knowledge.chunking import MAX_CHUNK_CHARS
from gateway.knowledge.parsing import DocumentUnreadable, parse_document
from gateway.knowledge.records import FORMATS, DocumentFormat
from tests.support.pdf_writer import pdf_document

# Bytes near what each reader meets: markup, a PDF's header, or a real PDF cut or corrupted.
_MARKUP = st.lists(
    st.sampled_from(
        [b"<", b">", b"</", b"<p>", b"<h1>", b"<script>", b"<!--", b"-->", b"&", b"&#x",
         b"#", b"```", b"~~~", b"\n", b"---", b"===", b"- ", b"<![CDATA[", b"\xff", b"\x00",
         b"a", b"word ", b"\xc3\xa7", b"<meta charset=", b"utf-16", b"\xef\xbb\xbf"]
    ),
    max_size=60,
).map(b"".join)  # fmt: skip
_PDF = pdf_document([["Some text on a page", "", "More text"], []], title="T")


@st.composite
def damaged_pdf(draw: st.DrawFn) -> bytes:
    body = bytearray(_PDF)
    for _ in range(draw(st.integers(min_value=0, max_value=8))):
        body[draw(st.integers(min_value=0, max_value=len(body) - 1))] = draw(
            st.integers(min_value=0, max_value=255)
        )
    if draw(st.booleans()):
        del body[draw(st.integers(min_value=0, max_value=len(body))) :]
    return bytes(body)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.binary(max_size=400), _MARKUP, damaged_pdf(), _MARKUP.map(b"%PDF-1.4\n".__add__)),
    st.sampled_from(FORMATS),
)
def test_any_body_is_read_or_refused_with_a_reason(body: bytes, fmt: DocumentFormat) -> None:
    read_or_refused(body, fmt)


@settings(max_examples=200, deadline=None)
@given(damaged_pdf())
def test_a_damaged_pdf_is_read_or_refused_with_a_reason(body: bytes) -> None:
    read_or_refused(body, "pdf")


def read_or_refused(body: bytes, fmt: DocumentFormat) -> None:
    try:
        doc = parse_document(body, fmt, fallback_title="upload")
    except DocumentUnreadable as error:
        event(f"{fmt} refused")
        assert str(error)
        return
    event(f"{fmt} read")
    assert doc.title
    assert doc.chunks
    assert all(0 < len(chunk.text) <= MAX_CHUNK_CHARS for chunk in doc.chunks)
