"""A shared contact's vCard (RFC 6350, as WhatsApp sends it: version 3.0) read down to what the
window needs: each card's name and phone numbers, `[contact] Ana Souza +55 11 99876-5432`.

Only the properties read here are parsed: lines are unfolded, a property's group (`item1.`) and
parameters (`;type=CELL;waid=…`) are dropped, and the text escapes (`\\,` `\\;` `\\n`) undone.
"""

from __future__ import annotations

import re

from channels.twilio_inbound import CONTACT_LABEL

# A card shared on WhatsApp is a few hundred bytes; anything far larger is not read.
MAX_VCARD_BYTES = 64 * 1024
_FOLD = re.compile(r"\r?\n[ \t]")
_ESCAPE = re.compile(r"\\(.)")


def _unescape(value: str) -> str:
    return _ESCAPE.sub(lambda m: " " if m.group(1) in "nN" else m.group(1), value).strip()


def _property(line: str) -> tuple[str, str] | None:
    head, colon, value = line.partition(":")
    if not colon:
        return None
    name = head.split(";", 1)[0].rsplit(".", 1)[-1].strip().upper()
    return name, value


def cards(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(name, phone numbers) of each card in `text`, in order; a card with neither is left
    out. The name is `FN`, or `N` (family;given;…) put in reading order."""
    found: list[tuple[str, tuple[str, ...]]] = []
    name, structured, phones = "", "", list[str]()
    for line in _FOLD.sub("", text).splitlines():
        prop = _property(line)
        if prop is None:
            continue
        key, value = prop
        if key == "BEGIN":
            name, structured, phones = "", "", list[str]()
        elif key == "FN":
            name = _unescape(value)
        elif key == "N":
            parts = [_unescape(p) for p in re.split(r"(?<!\\);", value)]
            structured = " ".join(p for p in (parts[1:2] + parts[:1]) if p)
        elif key == "TEL" and _unescape(value):
            phones.append(_unescape(value))
        elif key == "END" and (name or structured or phones):
            found.append((name or structured, tuple(phones)))
    return found


def contact_text(data: bytes) -> str | None:
    """The window's text for a shared vCard: `[contact] Name +55…` per card (joined by `; `),
    or None when the data is too large or holds no card with a name or number."""
    if len(data) > MAX_VCARD_BYTES:
        return None
    read = cards(data.decode("utf-8", errors="replace"))
    if not read:
        return None
    return "; ".join(
        " ".join(part for part in (CONTACT_LABEL, name, *phones) if part) for name, phones in read
    )
