"""Telegram updates to typed messages: pure, synchronous, no I/O.

`read_update` reads one webhook body once with `telegram.Update.de_json` and maps what a
customer says to the bot in a private chat: text, captioned media, voice and audio, locations,
contact shares, edits and button presses. Everything else — group and channel traffic,
reactions, boosts, member changes, messages from bots, service messages, update kinds newer
than this code — is `Ignored`, with its kind and the reason (never its content).

The provider message id is the `update_id`, Telegram's own delivery key: a redelivered update
is the same message; an edit is a new update pointing at the original through `edit_of`
(`"<chat_id>:<message_id>"`, also kept as `extra["message_key"]`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from telegram import CallbackQuery, Chat, MaybeInaccessibleMessage, Message, Update, User

from channels.base import InboundMessage, Media, MessageKind, PayloadInvalid
from channels.json_body import load_json

__all__ = [
    "CONTACT_PLACEHOLDER",
    "VOICE_PLACEHOLDER",
    "Ignored",
    "ignored_update",
    "read_update",
    "update_type",
    "with_old_schema_defaults",
]

VOICE_PLACEHOLDER = "[voice note, not transcribed]"
CONTACT_PLACEHOLDER = "[contact shared]"

# What `de_json` raises on a body that is JSON but not an update it can read.
# OSError: datetime refuses a timestamp past the platform's range with EOVERFLOW.
_SCHEMA_ERRORS = (
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    OverflowError,
    RecursionError,
    OSError,
)
# Object keys whose value is a `User` in the Bot API.
_USER_KEYS = frozenset({"from", "user", "via_bot", "left_chat_member"})


@dataclass(frozen=True, slots=True)
class Ignored:
    """An update acknowledged without a message: its kind and why (never its content)."""

    update_type: str
    reason: str


def _load(body: bytes) -> dict[str, Any]:
    data = load_json(body)
    if not isinstance(data, dict):
        raise PayloadInvalid("body must be a JSON object")
    update_id = data.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool) or update_id < 0:
        raise PayloadInvalid("update_id must be a non-negative integer")
    return data


def with_old_schema_defaults(value: Any, key: str | None = None) -> Any:
    """A copy of an update with the fields that later Bot API versions made required filled in.

    Telegram's own "testing your bot with updates" examples predate Bot API 3.0: users have
    no `is_bot`, files no `file_unique_id`, callback queries no `chat_instance`, and a chat
    may lack its `type`. Only absent fields are filled, with what the old schema meant: a
    positive chat id is a private chat (user ids are positive, group ids negative).
    """
    if isinstance(value, list):
        return [with_old_schema_defaults(item, key) for item in value]
    if not isinstance(value, dict):
        return value
    filled = {name: with_old_schema_defaults(item, name) for name, item in value.items()}
    if key in _USER_KEYS:
        filled.setdefault("is_bot", False)
    if key == "chat" and "type" not in filled and isinstance(filled.get("id"), int):
        filled["type"] = "private" if filled["id"] > 0 else "group"
    if key == "callback_query":
        filled.setdefault("chat_instance", "")
    if "file_id" in filled:
        filled.setdefault("file_unique_id", filled["file_id"])
    return filled


def _update(data: dict[str, Any]) -> Update:
    try:
        return Update.de_json(copy.deepcopy(data), bot=None)
    except _SCHEMA_ERRORS:
        pass
    try:
        return Update.de_json(with_old_schema_defaults(data), bot=None)
    except _SCHEMA_ERRORS as exc:
        raise PayloadInvalid(f"not a Telegram update: {type(exc).__name__}: {exc}") from exc


def update_type(data: Mapping[str, Any]) -> str:
    """The update's kind: its one field besides `update_id` (`"empty"` when there is none)."""
    return next((str(name)[:64] for name in data if name != "update_id"), "empty")


# PTB builds objects without checking field types: what the mapping reads is checked here.


def _int(value: object, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise PayloadInvalid(f"{where} must be an integer")


def _str(value: object, where: str) -> str | None:
    """A string field; absent or empty is None."""
    if value is None or isinstance(value, str):
        return value or None
    raise PayloadInvalid(f"{where} must be a string")


def _number(value: object, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise PayloadInvalid(f"{where} must be a number")


def _file(file: Any, where: str, default_type: str | None = None) -> Media:
    file_id = _str(file.file_id, f"{where}.file_id")
    if file_id is None:
        raise PayloadInvalid(f"{where}.file_id is missing")
    content_type = _str(getattr(file, "mime_type", None), f"{where}.mime_type")
    return Media(f"telegram:file:{file_id}", content_type or default_type)


def _sender(user: User | None, where: str) -> tuple[str, str | None] | str:
    """The user's id and display name, or why no customer is behind the update."""
    if user is None:
        return "no user sender"
    if user.is_bot:
        return "sent by a bot"
    user_id = _int(user.id, f"{where}.id")
    if user_id <= 0:
        raise PayloadInvalid(f"{where}.id must be a positive user id")
    first, last = (
        _str(user.first_name, f"{where}.first_name"),
        _str(user.last_name, f"{where}.last_name"),
    )
    return str(user_id), " ".join(part for part in (first, last) if part) or None


def _chat(message: MaybeInaccessibleMessage, where: str) -> tuple[int, str]:
    chat = message.chat
    if not isinstance(chat, Chat):
        raise PayloadInvalid(f"{where}.chat is missing")
    return _int(chat.id, f"{where}.chat.id"), str(chat.type)


Content = tuple[MessageKind, str, tuple[Media, ...]]


def _place(message: Message) -> str | None:
    where = message.venue.location if message.venue is not None else message.location
    if where is None:
        return None
    point = f"({_number(where.latitude, 'latitude')}, {_number(where.longitude, 'longitude')})"
    if message.venue is None:
        return f"[location] {point}"
    title = _str(message.venue.title, "venue.title")
    address = _str(message.venue.address, "venue.address")
    place = ", ".join(part for part in (title, address) if part)
    return f"[location] {place} {point}" if place else f"[location] {point}"


def _content(message: Message) -> Content | None:
    """What a customer's message says, or None for service messages and unsupported content."""
    text = _str(message.text, "text")
    caption = _str(message.caption, "caption") or ""
    if text:
        return "text", text, ()
    if message.voice is not None:
        return "voice", caption or VOICE_PLACEHOLDER, (_file(message.voice, "voice", "audio/ogg"),)
    if message.audio is not None:
        media = (_file(message.audio, "audio", "audio/mpeg"),)
        return "voice", caption or VOICE_PLACEHOLDER, media
    if message.contact is not None:
        return "contact", CONTACT_PLACEHOLDER, ()
    place = _place(message)
    if place is not None:
        return "location", place, ()
    if message.photo:
        sizes = [
            (_int(s.width, "photo.width") * _int(s.height, "photo.height"), s)
            for s in message.photo
        ]
        largest = max(sizes, key=lambda pair: pair[0])[1]
        return "media", caption or "[photo]", (_file(largest, "photo", "image/jpeg"),)
    if message.animation is not None:  # GIFs also carry a `document`: look at this first
        return (
            "media",
            caption or "[animation]",
            (_file(message.animation, "animation", "video/mp4"),),
        )
    if message.video is not None:
        return "media", caption or "[video]", (_file(message.video, "video", "video/mp4"),)
    if message.video_note is not None:
        media = (_file(message.video_note, "video_note", "video/mp4"),)
        return "media", caption or "[video note]", media
    if message.document is not None:
        name = _str(message.document.file_name, "document.file_name")
        label = f"[document {name}]" if name else "[document]"
        return "media", caption or label, (_file(message.document, "document"),)
    if message.sticker is not None:
        sticker = message.sticker
        kind = "video/webm" if sticker.is_video else "image/webp"
        kind = "application/x-tgsticker" if sticker.is_animated else kind
        emoji = _str(sticker.emoji, "sticker.emoji")
        return (
            "media",
            f"[sticker {emoji}]" if emoji else "[sticker]",
            (_file(sticker, "sticker", kind),),
        )
    return None


def _from_message(
    update: Update, message: Message, kind_of_update: str, received_at: datetime
) -> InboundMessage | Ignored:
    sender = _sender(message.from_user, f"{kind_of_update}.from")
    if isinstance(sender, str):
        return Ignored(kind_of_update, sender)
    chat_id, chat_type = _chat(message, kind_of_update)
    if chat_type != "private":
        # Replies go to the user's private chat: answering group traffic there (with what
        # Relaydesk knows about the customer) is not a conversation the user opened.
        return Ignored(kind_of_update, f"{chat_type} chat, not a private chat")
    content = _content(message)
    if content is None:
        return Ignored(kind_of_update, "no text or supported content")
    kind, text, media = content
    message_id = _int(message.message_id, f"{kind_of_update}.message_id")
    key = f"{chat_id}:{message_id}"
    edit_of = None
    if kind_of_update == "edited_message":
        if not (message.text or message.caption):
            # Live locations are streamed as edits of the location message.
            return Ignored(kind_of_update, "edit without text")
        kind, edit_of = "edit", key
    phone, contact_user = None, None
    if kind == "contact" and message.contact is not None:
        phone = _str(message.contact.phone_number, "contact.phone_number")
        contact_user = message.contact.user_id
        if contact_user is not None:
            contact_user = _int(contact_user, "contact.user_id")
    return InboundMessage(
        channel="telegram",
        provider_message_id=str(update.update_id),
        sender=sender[0],
        text=text,
        received_at=received_at,
        kind=kind,
        sender_name=sender[1],
        media=media,
        contact_phone=phone,
        contact_user_id=contact_user,
        edit_of=edit_of,
        extra={
            "update_id": str(update.update_id),
            "update_type": kind_of_update,
            "chat_id": str(chat_id),
            "message_id": str(message_id),
            "message_key": key,
        },
    )


def _from_callback(
    update: Update, query: CallbackQuery, received_at: datetime
) -> InboundMessage | Ignored:
    sender = _sender(query.from_user, "callback_query.from")
    if isinstance(sender, str):
        return Ignored("callback_query", sender)
    extra = {"update_id": str(update.update_id), "update_type": "callback_query"}
    query_id = _str(query.id, "callback_query.id")
    if query_id:
        extra["callback_query_id"] = query_id
    if query.message is not None:
        chat_id, chat_type = _chat(query.message, "callback_query.message")
        if chat_type != "private":
            return Ignored("callback_query", f"{chat_type} chat, not a private chat")
        extra["chat_id"] = str(chat_id)
        extra["message_id"] = str(_int(query.message.message_id, "callback_query.message_id"))
    else:
        inline = _str(query.inline_message_id, "inline_message_id")
        if inline:
            extra["inline_message_id"] = inline
    data = _str(query.data, "callback_query.data")
    if data is None:
        return Ignored("callback_query", "button without data")
    return InboundMessage(
        channel="telegram",
        provider_message_id=str(update.update_id),
        sender=sender[0],
        text=data,
        received_at=received_at,
        kind="button",
        sender_name=sender[1],
        extra=extra,
    )


def read_update(body: bytes, received_at: datetime) -> InboundMessage | Ignored:
    """The customer message in one webhook body, or why there is none.

    Raises `PayloadInvalid` when the body is not a Telegram update at all.
    """
    data = _load(body)
    update = _update(data)
    kind_of_update = update_type(data)
    if update.message is not None:
        return _from_message(update, update.message, "message", received_at)
    if update.edited_message is not None:
        return _from_message(update, update.edited_message, "edited_message", received_at)
    if update.callback_query is not None:
        return _from_callback(update, update.callback_query, received_at)
    return Ignored(kind_of_update, "update kind not handled")


def ignored_update(body: bytes) -> Ignored | None:
    """Why a valid body carries no customer message (None when it does or is invalid)."""
    try:
        result = read_update(body, datetime.min)
    except PayloadInvalid:
        return None
    return result if isinstance(result, Ignored) else None


def webhook_answer(messages: Sequence[InboundMessage]) -> dict[str, str | bool]:
    """The body of the webhook's 200: a button tap is answered in it (`answerCallbackQuery`,
    which Telegram runs for a webhook's reply), so the customer's button stops spinning at once
    without a request of ours; anything else gets a plain acknowledgement."""
    for message in messages:
        query_id = message.extra.get("callback_query_id")
        if query_id:
            return {"method": "answerCallbackQuery", "callback_query_id": query_id}
    return {"ok": True}
