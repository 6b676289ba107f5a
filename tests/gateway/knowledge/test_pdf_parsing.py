"""PDF read into chunks through pypdf: the metadata title, one section per page, paragraphs
from the gaps between lines, and encrypted, image-only or damaged files refused."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter

from gateway.knowledge.chunking import MAX_CHUNK_CHARS
from gateway.knowledge.parsing import DocumentUnreadable, parse_document
from tests.support.pdf_writer import pdf_document

MANUAL = [
    [
        "Warranty terms",
        "Every device is covered for two years",
        "from the day it was delivered.",
        "",
        "Preço (promoção) válido até março.",
    ],
    [],  # a scanned page: an image, no text layer
    ["Returns are free within 30 days."],
]


def parse(
    body: bytes, fallback: str = "manual.pdf"
) -> tuple[str, list[tuple[tuple[str, ...], str]]]:
    doc = parse_document(body, "pdf", fallback_title=fallback)
    assert [chunk.position for chunk in doc.chunks] == list(range(len(doc.chunks)))
    return doc.title, [(chunk.headings, chunk.text) for chunk in doc.chunks]


def encrypted(body: bytes, *, user_password: str, algorithm: str) -> bytes:
    writer = PdfWriter(clone_from=io.BytesIO(body))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_each_page_is_a_section_and_the_title_comes_from_the_metadata() -> None:
    title, chunks = parse(pdf_document(MANUAL, title="Garantia & devoluções"))

    assert title == "Garantia & devoluções"
    assert chunks == [
        (
            ("Page 1",),
            "Warranty terms Every device is covered for two years from the day it was delivered."
            "\n\nPreço (promoção) válido até março.",
        ),
        (("Page 3",), "Returns are free within 30 days."),
    ]


def test_without_a_title_in_the_metadata_the_title_falls_back() -> None:
    assert parse(pdf_document(MANUAL), fallback="warranty.pdf")[0] == "warranty.pdf"
    assert parse(pdf_document(MANUAL, title="   "), fallback="warranty.pdf")[0] == "warranty.pdf"


@pytest.mark.parametrize(
    ("metadata_title", "title"),
    [
        ("Microsoft Word - Política de trocas.docx", "Política de trocas"),
        ("Document1", "manual.pdf"),
        ("untitled", "manual.pdf"),
        ("Sem título", "manual.pdf"),
        ("Price list 2026", "Price list 2026"),
    ],
)
def test_titles_office_software_writes_are_cleaned_or_ignored(
    metadata_title: str, title: str
) -> None:
    assert parse(pdf_document(MANUAL, title=metadata_title))[0] == title


def test_running_heads_page_numbers_and_hyphenation_are_undone() -> None:
    pages = [
        [
            "Acme manual \u2013 chapter 1",
            "",
            f"Step {n} covers inter-",
            "national shipping and well-known couriers.",
            "\u2022 Pack the box",
            "\u2022 Seal it",
            "",
            f"Page {n} of 3",
        ]
        for n in (1, 2, 3)
    ]
    pages[1][0] = "Acme manual \u2013 chapter 2"  # numbers aside, the same head
    pages.append(["Notes", "", "Nothing else.", "", "iv"])  # a lone page number is dropped

    _, chunks = parse(pdf_document(pages))

    assert chunks == [
        *(
            (
                (f"Page {n}",),
                f"Step {n} covers international shipping and well-known couriers.\n"
                "\u2022 Pack the box\n\u2022 Seal it",
            )
            for n in (1, 2, 3)
        ),
        (("Page 4",), "Notes\n\nNothing else."),
    ]


def test_a_long_page_is_split_within_the_bound_and_keeps_its_page() -> None:
    lines = []
    for paragraph in range(6):
        lines += [f"Clause {paragraph} says the device must be returned complete."] * 6 + [""]
    _, chunks = parse(pdf_document([["Short first page."], lines]))

    assert chunks[0] == (("Page 1",), "Short first page.")
    assert len(chunks) > 2
    assert all(headings == ("Page 2",) for headings, _ in chunks[1:])
    assert all(len(text) <= MAX_CHUNK_CHARS for _, text in chunks)
    # Split at the paragraph gaps: every chunk holds whole clauses of one number.
    pieces = [piece for _, text in chunks[1:] for piece in text.split("\n\n")]
    assert [piece.split()[1] for piece in pieces] == [str(n) for n in range(6)]
    assert all(len(set(piece.split()[1::9])) == 1 for piece in pieces)


def test_a_pdf_that_only_restricts_copying_is_read() -> None:
    body = encrypted(pdf_document(MANUAL, title="Locked"), user_password="", algorithm="AES-128")

    assert parse(body)[0] == "Locked"


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_a_pdf_with_a_password_is_refused(algorithm: str) -> None:
    body = encrypted(pdf_document(MANUAL), user_password="s3cret", algorithm=algorithm)

    with pytest.raises(DocumentUnreadable, match="encrypted with a password"):
        parse(body)


def test_a_pdf_of_scanned_images_only_is_refused() -> None:
    with pytest.raises(DocumentUnreadable, match=r"no text to read \(scanned pages"):
        parse(pdf_document([[], []], title="Scan"))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"Just some text, not a PDF.", "not a PDF"),
        (b"<html><body>Hi</body></html>", "not a PDF"),
        (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", "damaged"),
        (pdf_document([["Half a file"]])[:200], "damaged"),
        (pdf_document([]), "no pages"),
    ],
)
def test_a_body_that_is_not_a_readable_pdf_is_refused(body: bytes, reason: str) -> None:
    with pytest.raises(DocumentUnreadable, match=reason):
        parse(body)
