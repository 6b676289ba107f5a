"""The Debian FAQ read into a knowledge base and the questions it answers.

The corpus is the plain-text FAQ of Debian's ``debian-faq`` package
(``/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz``; never committed, see
docs/retrieval.md). Its sections are numbered (``3.1.4. Question?``, the heading wrapped over
more lines flush left, the answer indented below it) under ``Chapter N. Title`` lines. Every
section becomes one document: its answer only, under its chapter's title, read by the
project's own parser (`gateway.knowledge.parsing.parse_document`, plain text) into chunks. The
heading is left out of the document, and so is every heading another answer quotes in a
cross-reference (``Section 12.1, “What other documentation exists…?”`` reads ``Section 12.1``):
a question has to be found by what its answer says, not by copying the question's words.
Each heading that asks something (it holds a ``?``) is a question whose gold document is its
own section; the other sections stay as documents the questions must not be answered from.

Every fourth document is for ``verified`` customers and the rest ``public``, so the run can
check that an anonymous visitor's window never holds a ``verified`` chunk.
"""

from __future__ import annotations

import gzip
import re
import textwrap
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Final

from context.inputs import KnowledgeItem
from context.knowledge import chunk_terms
from gateway.knowledge.parsing import DocumentUnreadable, parse_document
from identity.audience import Audience

__all__ = [
    "FAQ_DATE",
    "CorpusChunk",
    "CorpusMissing",
    "CorpusQuestion",
    "FaqSection",
    "KnowledgeCorpus",
    "corpus_of",
    "load_corpus",
    "read_faq",
]

# The FAQ's own date (its version 11.0, January 2021): every document carries it.
FAQ_DATE: Final = date(2021, 1, 1)
# Every this-many-th document (the last of each run) is for verified customers only.
VERIFIED_EVERY: Final = 4

_CHAPTER: Final = re.compile(r"^Chapter (?P<number>\d+)\. +(?P<title>.+)$")
_SECTION: Final = re.compile(r"^(?P<number>\d+(?:\.\d+)+)\. +(?P<heading>.+)$")
# A cross-reference quotes the heading it points to: `Section 12.1, “What other
# documentation exists…?”` (wrapped like the text). The quote is another question's words.
_CROSS_REFERENCE: Final = re.compile(r"(?P<section>Section\s+\d+(?:\.\d+)*),\s+“[^”]*”")


class CorpusMissing(FileNotFoundError):
    """The corpus file is not where the command was told it is."""


@dataclass(frozen=True, slots=True)
class FaqSection:
    """One numbered section: its number, its chapter's title, its heading on one line and its
    answer (dedented, paragraphs blank lines apart)."""

    number: str
    chapter: str
    heading: str
    body: str

    @property
    def asks(self) -> bool:
        """Whether the heading asks something (some are titles: "Feedback"; a question may end
        in ``?!`` or go on after its question mark)."""
        return "?" in self.heading


@dataclass(frozen=True, slots=True)
class CorpusChunk:
    """A chunk as a window would be offered it, who may be told it, and what it is embedded as
    (its headings above its text, as the background embedding does)."""

    item: KnowledgeItem
    audience: Audience
    passage: str


@dataclass(frozen=True, slots=True)
class CorpusQuestion:
    """A question and the document (section) that answers it."""

    number: str
    text: str
    gold_document_id: str


@dataclass(frozen=True, slots=True)
class KnowledgeCorpus:
    name: str
    documents: int
    chunks: tuple[CorpusChunk, ...]
    questions: tuple[CorpusQuestion, ...]


def document_id(number: str) -> str:
    return f"faq-{number}"


def read_faq(text: str) -> tuple[FaqSection, ...]:
    """The numbered sections of the FAQ's plain text, in order; the front matter (title,
    licence, table of contents) before the first chapter line is skipped."""
    lines = text.replace("\u00a0", " ").replace("\r\n", "\n").split("\n")
    sections: list[FaqSection] = []
    chapter_number, chapter = "", ""
    number: str | None = None
    heading: list[str] = []
    body: list[str] = []
    in_heading = False

    def close() -> None:
        if number is not None:
            answer = textwrap.dedent("\n".join(body)).strip("\n")
            answer = _CROSS_REFERENCE.sub(lambda found: found["section"], answer)
            sections.append(FaqSection(number, chapter, " ".join(heading), answer))

    for line in lines:
        if line and not line[0].isspace():
            if found := _CHAPTER.match(line):
                close()
                number, in_heading = None, False
                chapter_number, chapter = found["number"], found["title"].strip()
                continue
            found = _SECTION.match(line)
            # A numbered line of another chapter is text (a version, a list), not a heading.
            if found and chapter and found["number"].split(".")[0] == chapter_number:
                close()
                number, heading, body = found["number"], [found["heading"].strip()], []
                in_heading = True
                continue
            if in_heading:
                heading.append(line.strip())
                continue
        if not line.strip():
            in_heading = False
        if number is not None and not in_heading:
            body.append(line)
    close()
    return tuple(sections)


def corpus_of(sections: tuple[FaqSection, ...], *, name: str) -> KnowledgeCorpus:
    """The sections as documents (answers only) and the questions among their headings."""
    chunks: list[CorpusChunk] = []
    questions: list[CorpusQuestion] = []
    documents = 0
    for section in sections:
        if not section.body.strip():
            continue
        doc_id = document_id(section.number)
        # The chapter's title as the document's first line: a plain text's title.
        body = f"{section.chapter}\n\n{section.body}\n".encode()
        try:
            parsed = parse_document(body, "text", fallback_title=section.chapter)
        except DocumentUnreadable:
            continue
        audience = Audience.VERIFIED if documents % VERIFIED_EVERY == 3 else Audience.PUBLIC
        documents += 1
        for chunk in parsed.chunks:
            item = KnowledgeItem(
                id=f"{doc_id}#{chunk.position}",
                document_id=doc_id,
                title=parsed.title,
                text=chunk.text,
                updated_at=FAQ_DATE,
                position=chunk.position,
                terms=chunk_terms(parsed.title, chunk.headings, chunk.text),
            )
            chunks.append(CorpusChunk(item, audience, "\n".join([*chunk.headings, chunk.text])))
        if section.asks:
            questions.append(CorpusQuestion(section.number, section.heading, doc_id))
    return KnowledgeCorpus(name, documents, tuple(chunks), tuple(questions))


def load_corpus(path: Path) -> KnowledgeCorpus:
    """The FAQ at ``path``, plain text or gzip-compressed (``.gz``)."""
    if not path.is_file():
        raise CorpusMissing(
            f"no FAQ at {path}: get it with `apt-get download debian-faq` and "
            "`dpkg-deb -x debian-faq_*.deb DIR`, then pass "
            "DIR/usr/share/doc/debian/FAQ/debian-faq.en.txt.gz"
        )
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return corpus_of(read_faq(raw.decode("utf-8")), name=path.name)
