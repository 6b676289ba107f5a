"""A document's bytes read into its title and chunks, whatever its format.

`format_of` tells the format from an upload's Content-Type or file name; `parse_document`
reads the bytes of that format (Markdown, HTML, PDF or plain text) and packs the text into
chunks under their headings (`gateway.knowledge.chunking`). A body that is not of its format,
or has no text, is refused with `DocumentUnreadable` and a reason a person can act on. Pure:
no I/O, nothing fetched.
"""

from __future__ import annotations

from typing import Final

from gateway.knowledge.chunking import chunks_of, collapse_spaces
from gateway.knowledge.decoding import decode_text, looks_binary
from gateway.knowledge.html_chunks import html_charset, read_html
from gateway.knowledge.markdown_chunks import read_markdown
from gateway.knowledge.pdf_chunks import PdfUnreadable, read_pdf
from gateway.knowledge.records import DocumentFormat, ParsedDocument
from gateway.knowledge.text_chunks import read_text

__all__ = ["MAX_TITLE_CHARS", "DocumentUnreadable", "format_of", "parse_document"]

MAX_TITLE_CHARS: Final = 200

_CONTENT_TYPES: Final[dict[str, DocumentFormat]] = {
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "text/plain": "text",
}
_EXTENSIONS: Final[dict[str, DocumentFormat]] = {
    "md": "markdown",
    "markdown": "markdown",
    "mdown": "markdown",
    "mkd": "markdown",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "pdf": "pdf",
    "txt": "text",
    "text": "text",
}


class DocumentUnreadable(ValueError):
    """The body is not a document of its format, or holds no text; the message says which."""


def format_of(content_type: str | None, filename: str | None) -> DocumentFormat | None:
    """The format named by ``content_type`` (parameters ignored), else by ``filename``'s
    extension; ``None`` when neither names one. ``text/plain`` is what many clients send for
    any text file, so a file name naming Markdown or HTML is the more precise of the two."""
    by_type = None
    if content_type:
        media_type = content_type.split(";", 1)[0].strip().lower()
        by_type = _CONTENT_TYPES.get(media_type)
    by_name = None
    if filename and "." in filename:
        by_name = _EXTENSIONS.get(filename.rsplit(".", 1)[1].strip().lower())
    if by_type == "text" and by_name in ("markdown", "html"):
        return by_name
    return by_type or by_name


def parse_document(body: bytes, fmt: DocumentFormat, *, fallback_title: str) -> ParsedDocument:
    """The title and chunks of ``body`` read as ``fmt``; the title falls back to
    ``fallback_title`` (a file name, a URL) when the document names none, and one longer than
    `MAX_TITLE_CHARS` is cut at a word. Raises `DocumentUnreadable` for a body that is not the
    format or has no text."""
    if fmt == "pdf":
        try:
            pdf = read_pdf(body)
        except PdfUnreadable as error:
            raise DocumentUnreadable(str(error)) from error
        title, sections = pdf.title, pdf.sections
    else:
        text = _text_of(body, fmt)
        if fmt == "markdown":
            outline = read_markdown(text)
            title, sections = outline.title, outline.sections
        elif fmt == "html":
            page = read_html(text)
            title, sections = page.title, page.sections
        else:
            plain = read_text(text)
            title, sections = plain.title, plain.sections
    chunks = chunks_of(sections)
    if not chunks:
        raise DocumentUnreadable(f"the {_NAMES[fmt]} document has no text")
    return ParsedDocument(
        title=_short(collapse_spaces(title or "")) or fallback_title, chunks=chunks
    )


def _short(title: str) -> str:
    """``title`` cut at a word near `MAX_TITLE_CHARS`: a title is shown beside every citation."""
    if len(title) <= MAX_TITLE_CHARS:
        return title
    head = title[: MAX_TITLE_CHARS + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else ""
    if len(cut) < MAX_TITLE_CHARS // 2:
        cut = title[:MAX_TITLE_CHARS]
    return cut.rstrip() + "\u2026"


_NAMES: Final[dict[DocumentFormat, str]] = {
    "markdown": "Markdown",
    "html": "HTML",
    "pdf": "PDF",
    "text": "plain text",
}


def _text_of(body: bytes, fmt: DocumentFormat) -> str:
    text = decode_text(body, declared=html_charset(body) if fmt == "html" else None)
    if looks_binary(text):
        raise DocumentUnreadable(
            f"the body is binary data, not {_NAMES[fmt]} text"
            + (" (it looks like a PDF)" if body.lstrip().startswith(b"%PDF-") else "")
        )
    return text
