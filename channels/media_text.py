"""How an attachment reads in a message's text, the same on every channel: the window shows
the model `[image: caption]`, never bytes or provider URLs."""

from __future__ import annotations

from collections.abc import Sequence

from channels.base import Media, MessageKind

# The word the window shows for each attachment kind.
LABELS: dict[str, str] = {
    "image": "image",
    "document": "document",
    "video": "video",
    "sticker": "sticker",
    "voice": "voice note",
    "media": "attachment",
}


def describe_media(kind: MessageKind, media: Sequence[Media], body: str = "") -> str:
    """The text of a message carrying `media`: `[image: caption]` (or `[document: name]`,
    `[video]`), one bracket per attachment, then the typed `body` when it is not the caption."""
    label = LABELS.get(kind, "attachment")
    parts = []
    for item in media:
        detail = item.caption or item.filename or ""
        parts.append(f"[{label}: {detail}]" if detail else f"[{label}]")
    captions = {item.caption for item in media if item.caption}
    text = " ".join(parts)
    if body and body not in captions:
        text = f"{text} {body}" if text else body
    return text or body
