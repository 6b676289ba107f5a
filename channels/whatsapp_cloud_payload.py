"""One WhatsApp Cloud API webhook body read once: its customer messages, delivery statuses and
what it carries that Relaydesk does not handle, each kept apart.

A body is `{"object": "whatsapp_business_account", "entry": [{"changes": [{"field", "value"}]}]}`;
Meta batches several entries, changes, messages and statuses in one POST. Only `field:
"messages"` changes carry messages and statuses; anything else is acknowledged and ignored.

The sender is `whatsapp:+<wa_id>`, the same channel identity as Twilio's `From`. Decisions on
what reaches the conversation (each ignored item is logged by the webhook with its reason):

- text, button and list replies, template quick replies, orders and locations become text;
  attachments read as `channels.media_text.describe_media` writes them (`[image: caption]`);
  audio is a voice note (kind "voice", a placeholder text) so it is transcribed before its
  turn is answered;
- an edit (`type: edit`) is a new version of the original message (kind "edit", `edit_of`),
  kept as history and not answered;
- reactions are ignored: an emoji on an earlier message is not a question, and answering it
  would send the customer a reply to a thumbs-up;
- deleted messages (`revoke`), `system` messages (number or identity changed), `unsupported`
  messages and interactive messages Meta could not read are ignored;
- a message without a phone number sender (a username-only user, `from_user_id` alone) is
  ignored: its identity would not be the customer's WhatsApp number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from channels.base import (
    DeliveryStatus,
    Ignored,
    InboundMessage,
    Media,
    MessageKind,
    Parsed,
    PayloadInvalid,
    SendReference,
)
from channels.json_body import load_json
from channels.media_text import describe_media

CHANNEL: Final = "whatsapp_cloud"
OBJECT = "whatsapp_business_account"
# Attachment types and the kind each becomes; audio (a voice note or a sent file) is "voice".
MEDIA_KINDS: Mapping[str, MessageKind] = {
    "image": "image",
    "video": "video",
    "document": "document",
    "sticker": "sticker",
    "audio": "voice",
}
# What a voice note reads as until it is transcribed (the words every channel uses).
VOICE_PLACEHOLDER = "[voice note, not transcribed]"
# "played" (a voice note heard) is past "read": the forward-only status path knows it as read.
STATUS_ALIASES = {"played": "read"}

JSON = dict[str, Any]
# A wa_id: the customer's number in international form, digits only (E.164: at most 15).
WA_ID = re.compile(r"^\+?[0-9]{6,15}$")


def read_notification(
    body: bytes,
    *,
    received_at: datetime,
    media_base: str,
    phone_number_id: str | None = None,
) -> Parsed:
    """The webhook body, read; raise `PayloadInvalid` with the reason when it is malformed.

    `media_base` is the Graph API base a media id is fetched from (each `Media.url` is the
    media object's own URL there); `phone_number_id`, when set, is the business number this
    gateway answers for: changes addressed to another number are ignored."""
    document = load_json(body)
    if not isinstance(document, dict):
        raise PayloadInvalid("body is not a JSON object")
    if document.get("object") != OBJECT:
        return Parsed(ignored=(Ignored(f"object {document.get('object')!r}", "not WhatsApp"),))
    messages: list[InboundMessage] = []
    statuses: list[DeliveryStatus] = []
    ignored: list[Ignored] = []
    for entry in _list(document, "entry", "body"):
        for change in _list(_object(entry, "entry[]"), "changes", "entry[]"):
            change = _object(change, "changes[]")
            field = change.get("field")
            if field != "messages":
                ignored.append(Ignored(f"field {field!r}", "only messages are handled"))
                continue
            value = _object(change.get("value"), "changes[].value")
            business = _object(value.get("metadata", {}), "metadata").get("phone_number_id")
            if phone_number_id and business != phone_number_id:
                ignored.append(Ignored("change", f"for another business number ({business})"))
                continue
            if _error_code(value) is not None:  # Meta could not deliver something to us
                ignored.append(Ignored("change errors", f"Meta reported {_error_code(value)}"))
            names = _profile_names(value)
            for item in _list(value, "messages", "value", required=False):
                read = _message(
                    _object(item, "messages[]"), names, received_at, media_base, business
                )
                if isinstance(read, Ignored):
                    ignored.append(read)
                else:
                    messages.append(read)
            statuses.extend(
                _status(_object(item, "statuses[]"))
                for item in _list(value, "statuses", "value", required=False)
            )
    return Parsed(_first_of_each(messages), tuple(statuses), tuple(ignored))


# The parts of a body


def _object(value: object, where: str) -> JSON:
    if not isinstance(value, dict):
        raise PayloadInvalid(f"{where} must be an object")
    return value


def _list(parent: JSON, key: str, where: str, *, required: bool = True) -> list[Any]:
    value = parent.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise PayloadInvalid(f"{where}.{key} must be a list")
    return value


def _text(parent: JSON, key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise PayloadInvalid(f"{where}.{key} must be a non-empty string")
    return value


def _optional(parent: JSON, key: str) -> str | None:
    value = parent.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise PayloadInvalid(f"{key} must be a string")
    return str(value)


def _profile_names(value: JSON) -> dict[str, str]:
    names: dict[str, str] = {}
    for contact in _list(value, "contacts", "value", required=False):
        contact = _object(contact, "contacts[]")
        name = _optional(_object(contact.get("profile", {}), "contacts[].profile"), "name")
        wa_id = _optional(contact, "wa_id")
        if wa_id and name:
            names[wa_id] = name
    return names


def _status(item: JSON) -> DeliveryStatus:
    status = _text(item, "status", "statuses[]").lower()
    code = None
    errors = _list(item, "errors", "statuses[]", required=False)
    if errors:
        code = _optional(_object(errors[0], "statuses[].errors[]"), "code")
    # Ours when it reads as a `SendReference`; anything else there is ignored, never refused.
    echoed = item.get("biz_opaque_callback_data")
    named = SendReference.read(echoed if isinstance(echoed, str) else None)
    reference, part = named if named is not None else (None, 0)
    return DeliveryStatus(
        _text(item, "id", "statuses[]"), STATUS_ALIASES.get(status, status), code, reference, part
    )


def _first_of_each(messages: list[InboundMessage]) -> tuple[InboundMessage, ...]:
    """One message per wamid: a batch repeating one is stored once (so is a repeated POST)."""
    seen: set[str] = set()
    kept = []
    for message in messages:
        if message.provider_message_id not in seen:
            seen.add(message.provider_message_id)
            kept.append(message)
    return tuple(kept)


# One message


@dataclass(frozen=True, slots=True)
class _Content:
    kind: MessageKind
    text: str
    media: tuple[Media, ...] = ()
    extra: Mapping[str, str] | None = None


def _message(
    item: JSON,
    names: Mapping[str, str],
    received_at: datetime,
    media_base: str,
    business: object,
) -> InboundMessage | Ignored:
    wamid = _text(item, "id", "messages[]")
    kind = _text(item, "type", "messages[]")
    if kind in {"reaction", "revoke", "system", "unsupported", "ephemeral"}:
        return Ignored(f"message {kind}", _why_ignored(kind, item))
    phone = _optional(item, "from")
    if phone is None or not WA_ID.fullmatch(phone):
        return Ignored(f"message {kind}", "the sender has no phone number (username only)")
    edit_of = None
    if kind == "edit":
        edit = _object(item.get("edit"), "messages[].edit")
        edit_of = _text(edit, "original_message_id", "messages[].edit")
        inner = _object(edit.get("message"), "messages[].edit.message")
        content = _content(_text(inner, "type", "edit.message"), inner, media_base)
        if isinstance(content, Ignored):
            return content
        content = _Content("edit", content.text, content.media, content.extra)
    else:
        content = _content(kind, item, media_base)
        if isinstance(content, Ignored):
            return content
    wa_id = phone.lstrip("+")
    context = _object(item.get("context", {}), "messages[].context")
    extra: dict[str, str] = {
        "message_key": edit_of or wamid,
        "type": kind,
        **(content.extra or {}),
    }
    if isinstance(business, str) and business:
        extra["phone_number_id"] = business  # the business number it was written to
    timestamp = _optional(item, "timestamp")
    if timestamp:
        extra["timestamp"] = timestamp
    if context.get("forwarded") or context.get("frequently_forwarded"):
        extra["forwarded"] = "frequently" if context.get("frequently_forwarded") else "once"
    referral = item.get("referral")
    if isinstance(referral, dict):
        for key in ("source_type", "source_id", "source_url", "ctwa_clid"):
            found = _optional(referral, key)
            if found:
                extra[f"referral_{key}"] = found
    return InboundMessage(
        channel=CHANNEL,
        provider_message_id=wamid,
        sender=f"whatsapp:+{wa_id}",
        text=content.text,
        received_at=received_at,
        kind=content.kind,
        sender_name=names.get(wa_id),
        media=content.media,
        edit_of=edit_of,
        reply_to_provider_id=_optional(context, "id"),
        extra=extra,
    )


def _why_ignored(kind: str, item: JSON) -> str:
    if kind == "reaction":
        return "a reaction is not a question to answer"
    if kind == "revoke":
        return "deleted by the customer; the stored message stays for audit"
    if kind == "system":
        system = item.get("system")
        detail = system.get("type") if isinstance(system, dict) else None
        return f"system notice ({detail})" if detail else "system notice"
    if kind == "unsupported":
        return f"a type WhatsApp does not deliver ({_error_code(item) or 'no code'})"
    return f"{kind} messages are not handled"


def _error_code(item: JSON) -> str | None:
    errors = item.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return _optional(errors[0], "code")
    return None


def _content(kind: str, item: JSON, media_base: str) -> _Content | Ignored:
    if kind == "text":
        body = _text(_object(item.get("text"), "messages[].text"), "body", "text")
        return _Content("text", body)
    if kind in MEDIA_KINDS:
        return _attachment(kind, _object(item.get(kind), f"messages[].{kind}"), media_base)
    if kind == "location":
        return _Content("location", _location(_object(item.get("location"), "location")))
    if kind == "contacts":
        return _Content("contact", _contacts(_list(item, "contacts", "messages[]")))
    if kind == "button":
        button = _object(item.get("button"), "messages[].button")
        text = _optional(button, "text") or _optional(button, "payload") or ""
        return _Content("button", text, extra=_payload(button, "payload"))
    if kind == "interactive":
        return _interactive(item)
    if kind == "order":
        return _Content("text", _order(_object(item.get("order"), "messages[].order")))
    return Ignored(f"message {kind}", f"{kind} messages are not handled")


def _attachment(kind: str, part: JSON, media_base: str) -> _Content:
    media_id = _text(part, "id", f"{kind}")
    media = Media(
        url=f"{media_base.rstrip('/')}/{media_id}",
        content_type=_optional(part, "mime_type"),
        media_id=media_id,
        caption=_optional(part, "caption"),
        filename=_optional(part, "filename"),
    )
    message_kind = MEDIA_KINDS[kind]
    if kind == "audio":
        extra = {"voice": "true"} if part.get("voice") is True else None
        return _Content(message_kind, VOICE_PLACEHOLDER, (media,), extra)
    return _Content(message_kind, describe_media(message_kind, (media,)), (media,))


def _location(location: JSON) -> str:
    place = ", ".join(p for p in (_optional(location, "name"), _optional(location, "address")) if p)
    latitude, longitude = _optional(location, "latitude"), _optional(location, "longitude")
    where = f"({latitude}, {longitude})" if latitude and longitude else ""
    return " ".join(p for p in ("[location]", place, where) if p)


def _contacts(cards: list[Any]) -> str:
    described = []
    for card in cards:
        card = _object(card, "contacts[]")
        name = _object(card.get("name", {}), "contacts[].name")
        full = _optional(name, "formatted_name") or " ".join(
            p for p in (_optional(name, "first_name"), _optional(name, "last_name")) if p
        )
        phones = [
            _optional(_object(p, "contacts[].phones[]"), "phone") or ""
            for p in _list(card, "phones", "contacts[]", required=False)
        ]
        described.append(" ".join(p for p in ("[contact]", full, *phones) if p))
    return "; ".join(described) or "[contact]"


def _interactive(item: JSON) -> _Content | Ignored:
    interactive = item.get("interactive")
    if not isinstance(interactive, dict):
        return Ignored("message interactive", "no reply Meta could read")
    reply_type = interactive.get("type")
    if reply_type in {"button_reply", "list_reply"}:
        reply = _object(interactive.get(reply_type), f"interactive.{reply_type}")
        title = _text(reply, "title", f"interactive.{reply_type}")
        return _Content("button", title, extra=_payload(reply, "id"))
    return Ignored("message interactive", f"{reply_type} replies are not handled")


def _payload(part: JSON, key: str) -> dict[str, str]:
    value = _optional(part, key)
    return {"button_payload": value} if value else {}


def _order(order: JSON) -> str:
    items = []
    for product in _list(order, "product_items", "order", required=False):
        product = _object(product, "order.product_items[]")
        quantity = _optional(product, "quantity") or "1"
        items.append(f"{quantity} × {_optional(product, 'product_retailer_id') or '?'}")
    note = _optional(order, "text")
    return " ".join(p for p in ("[order]", ", ".join(items), note) if p)
