"""Attachments as a message stores them (`messages.media`): `{"items": [{"url", "content_type",
"media_id", "caption", "filename"}]}`, references only. The repositories encode a message's
`Media` tuple with it on write and decode it on read; nothing past storage sees the dict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from channels.base import Media

FIELDS = ("content_type", "media_id", "caption", "filename")


def stored_media(media: Sequence[Media]) -> dict[str, Any] | None:
    """What `messages.media` keeps of `media` (None for none)."""
    if not media:
        return None
    return {
        "items": [
            {"url": m.url, **{name: getattr(m, name) for name in FIELDS if getattr(m, name)}}
            for m in media
        ]
    }


def media_of(stored: Mapping[str, Any] | None) -> tuple[Media, ...]:
    """The attachments a stored message carries; items without a URL are skipped."""
    items = (stored or {}).get("items") or []
    found = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("url"), str):
            continue
        values = {name: item.get(name) for name in FIELDS}
        found.append(
            Media(item["url"], **{k: str(v) for k, v in values.items() if isinstance(v, str) and v})
        )
    return tuple(found)
