"""What a document becomes once read: its title and its chunks, each under its headings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DocumentFormat = Literal["markdown", "html", "pdf", "text"]
FORMATS: tuple[DocumentFormat, ...] = ("markdown", "html", "pdf", "text")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One retrievable piece of a document: its order in the document, the headings above it
    (outermost first) and its text."""

    position: int
    headings: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    title: str
    chunks: tuple[Chunk, ...]
