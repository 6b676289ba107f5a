"""Bytes of a text document made text: the encoding from a byte-order mark, a declared charset,
or UTF-8; and the test that tells text from binary. Pure."""

from __future__ import annotations

import codecs
import re
from typing import Final

__all__ = ["decode_text", "looks_binary"]

_BOMS: Final = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Control characters other than tab, line feed, vertical tab, form feed and carriage return.
_CONTROLS: Final = re.compile(r"[\x00-\x08\x0e-\x1f]")
# Share of other control characters above which the "text" is binary data.
_BINARY_SHARE: Final = 0.01
_NON_ASCII_BUT_REPLACEMENT: Final = re.compile(r"[^\x00-\x7f\ufffd]")


def decode_text(body: bytes, *, declared: str | None = None) -> str:
    """``body`` as text: a byte-order mark wins, then a ``declared`` charset Python knows, then
    UTF-8 with replacement characters; a body with no valid UTF-8 beyond ASCII at all is read
    as Windows-1252 (legacy pages and Windows text files)."""
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, errors="replace")
    if declared:
        try:
            return body.decode(codecs.lookup(declared.strip()).name, errors="replace")
        except LookupError:
            pass
    text = body.decode("utf-8", errors="replace")
    if "\ufffd" in text and not _NON_ASCII_BUT_REPLACEMENT.search(text):
        return body.decode("cp1252", errors="replace")
    return text


def looks_binary(text: str) -> bool:
    """Whether decoded ``text`` is binary data: a NUL, or too many other control characters."""
    if "\x00" in text:
        return True
    if not text:
        return False
    return len(_CONTROLS.findall(text)) / len(text) > _BINARY_SHARE
