"""What a Twilio WhatsApp webhook carries besides its ids: the kind of message, its
attachments (kept as references, never downloaded here) and the text the window reads.

Twilio's inbound webhook (https://www.twilio.com/docs/messaging/guides/webhook-request) gives
`MessageType` on WhatsApp (text, image, video, document, audio, sticker, location, contacts,
interactive, button, reaction, unsupported); older payloads lack it, so the kind also follows
from the parameters themselves: `Latitude`/`Longitude`, `ButtonText`/`ButtonPayload`, and the
content type of the first `MediaContentType{i}`. A caption arrives as `Body`; a shared contact
arrives as a `text/vcard` attachment (its card is read later, see `channels.vcard`); a reply to
an earlier message names it in `OriginalRepliedMessageSid`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from multidict import MultiDict

from channels.base import Media, MessageKind, PayloadInvalid
from channels.media_text import describe_media

AUDIO_PLACEHOLDER = "[voice note, not transcribed]"
CONTACT_LABEL = "[contact]"
UNSUPPORTED = "[unsupported message]"
VCARD_TYPES = frozenset({"text/vcard", "text/x-vcard", "text/directory"})
# Twilio accepts up to 10 media on one message.
MAX_MEDIA = 10

# Twilio's `MessageType` → our kind; "text", "unsupported" and new values follow the payload.
DECLARED: dict[str, MessageKind] = {
    "image": "image",
    "video": "video",
    "document": "document",
    "audio": "voice",
    "sticker": "sticker",
    "location": "location",
    "contacts": "contact",
    "interactive": "button",
    "button": "button",
    "reaction": "reaction",
}


def media_of(params: MultiDict[str]) -> tuple[Media, ...]:
    """The attachments `NumMedia` announces, each as its URL and content type; the caption
    (`Body`) goes on the first, the one a WhatsApp message carries."""
    try:
        count = int(params.get("NumMedia", "0") or "0")
    except ValueError as exc:
        raise PayloadInvalid("NumMedia is not a number") from exc
    media = [
        Media(params[f"MediaUrl{i}"], params.get(f"MediaContentType{i}") or None)
        for i in range(max(0, min(count, MAX_MEDIA)))
        if params.get(f"MediaUrl{i}")
    ]
    caption = params.get("Body", "").strip()
    if media and caption and not is_voice_or_contact(media[0]):
        media[0] = replace(media[0], caption=caption)
    return tuple(media)


def is_voice_or_contact(media: Media) -> bool:
    content_type = _base_type(media)
    return content_type.startswith("audio/") or content_type in VCARD_TYPES


def _base_type(media: Media) -> str:
    return (media.content_type or "").split(";")[0].strip().lower()


def _kind_of_media(media: Media) -> MessageKind:
    content_type = _base_type(media)
    if content_type in VCARD_TYPES:
        return "contact"
    if content_type.startswith("audio/"):
        return "voice"
    if content_type == "image/webp":
        return "sticker"  # WhatsApp sends photos as JPEG; its stickers are WebP
    if content_type.startswith("image/"):
        return "image"
    if content_type.startswith("video/"):
        return "video"
    if content_type.startswith(("application/", "text/")):
        return "document"
    return "media"


def kind_of(params: MultiDict[str], media: Sequence[Media]) -> MessageKind:
    declared = DECLARED.get(params.get("MessageType", "").strip().lower())
    if declared is not None:
        return declared
    if params.get("Latitude") and params.get("Longitude"):
        return "location"
    if params.get("ButtonText") or params.get("ButtonPayload"):
        return "button"
    return _kind_of_media(media[0]) if media else "text"


def text_of(params: MultiDict[str], kind: MessageKind, media: Sequence[Media]) -> str:
    """What the window reads: the typed words, or what was sent described in brackets
    (`[image: caption]`, `[location] Label, Address (lat, long)`, `[contact]`)."""
    body = params.get("Body", "")
    if kind == "location":
        place = ", ".join(p for p in (params.get("Label"), params.get("Address")) if p)
        where = f"{params.get('Latitude')}, {params.get('Longitude')}"
        return body or f"[location] {place} ({where})".replace(" ()", "").strip()
    if kind == "button":
        return body or params.get("ButtonText") or params.get("ButtonPayload") or ""
    if kind == "voice":
        return body or AUDIO_PLACEHOLDER
    if kind == "contact":
        return f"{CONTACT_LABEL} {body}".strip()
    if kind == "reaction":
        return f"[reaction] {body}".strip()
    if media:
        return describe_media(kind, media, body)
    if not body and params.get("MessageType", "text") not in ("", "text"):
        return UNSUPPORTED  # a kind WhatsApp does not pass on (a poll, a view-once photo)
    return body
