"""Attachments a model's reply asks for: a line `[[media: https://… | caption]]` anywhere in the
reply attaches the file at that URL (the caption is optional) and is taken out of the text the
customer reads, as the handoff marker is. Only http and https URLs count; a marker with
anything else is left in the text as written, so nothing is sent that the reply did not say.

A tenant lets the model attach files from the hosts it lists only (`listed_attachments`): a
model can be talked into naming any URL, and the file behind it is sent, or fetched first.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from context.host_patterns import any_host_matches

MARKER = re.compile(
    r"\[\[\s*media\s*:\s*(?P<url>[^\s|\]]+)\s*(?:\|\s*(?P<caption>[^\]]*?))?\s*\]\]"
)
MAX_ATTACHMENTS = 10


@dataclass(frozen=True, slots=True)
class ReplyAttachment:
    url: str
    caption: str | None = None
    content_type: str | None = None  # guessed from the URL's path, when it names a known type


def _usable(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def split_attachments(text: str) -> tuple[str, tuple[ReplyAttachment, ...]]:
    """The reply without its media markers, and the attachments they named, in order (at most
    `MAX_ATTACHMENTS`; markers beyond that stay in the text)."""
    found: list[ReplyAttachment] = []

    def take(match: re.Match[str]) -> str:
        url = match.group("url")
        if len(found) >= MAX_ATTACHMENTS or not _usable(url):
            return match.group(0)
        caption = (match.group("caption") or "").strip() or None
        content_type, _ = mimetypes.guess_type(urlsplit(url).path)
        found.append(ReplyAttachment(url, caption, content_type))
        return ""

    stripped = MARKER.sub(take, text)
    if not found:
        return text, ()
    lines = [re.sub(r"[ \t]{2,}", " ", line).strip() for line in stripped.splitlines()]
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return cleaned, tuple(found)


def attachment_host(url: str) -> str | None:
    """The host a marker's URL names; None for one whose host URL parsers may read apart
    (user info before an `@`, a backslash), which no list matches."""
    parts = urlsplit(url)
    if "@" in parts.netloc or "\\" in url:
        return None
    return parts.hostname


def listed_attachments(
    found: tuple[ReplyAttachment, ...], media_hosts: Sequence[str]
) -> tuple[tuple[ReplyAttachment, ...], tuple[ReplyAttachment, ...]]:
    """The attachments whose URL's host is on `media_hosts` (host patterns:
    `context.host_patterns`), and the others."""
    kept: list[ReplyAttachment] = []
    dropped: list[ReplyAttachment] = []
    for attachment in found:
        host = attachment_host(attachment.url)
        listed = host is not None and any_host_matches(media_hosts, host)
        (kept if listed else dropped).append(attachment)
    return tuple(kept), tuple(dropped)


# The start of a media marker still being written at the end of a streamed reply.
_UNFINISHED = re.compile(
    r"\[(?:\[(?:\s*(?:m(?:e(?:d(?:i(?:a(?:\s*:[^\]]*(?:\][^\]]*)?)?)?)?)?)?)?)?)?$"
)


def shown_while_written(text: str) -> str:
    """A reply being streamed as the customer may see it: its finished media markers taken out
    and one being written at the end held back."""
    cleaned, _ = split_attachments(text)
    unfinished = _UNFINISHED.search(cleaned)
    return cleaned[: unfinished.start()].rstrip() if unfinished else cleaned
