"""The name an operator sees for a conversation, from the best evidence at hand: the name the
customer stated (a name fact in force), then the channel's profile name (WhatsApp's
`ProfileName`, the Cloud API contact's profile name, Telegram's first and last name), then a
short masked identifier. A raw channel id is never shown as a name: a web chat visitor id is
long, opaque and, with a signed identity, may be personal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# The name facts, most specific first (the customer's preferred form before the legal one).
NAME_FACT_KEYS = ("preferred_name", "name", "full_name")
# The longest name shown: a profile name is whatever the customer typed on their app.
MAX_NAME_LENGTH = 80
_TAIL = 4
_CHANNEL_LABELS = {
    "whatsapp": "WhatsApp",
    "telegram": "Telegram user",
    "webchat": "Web visitor",
    "voice": "Caller",
}


@dataclass(frozen=True, slots=True)
class NameEvidence:
    """What is known of one conversation's customer: `stated` by key among `NAME_FACT_KEYS`,
    the `profile` name its channel gave, and the channel's own id (`external_id`)."""

    channel: str
    external_id: str
    stated: Mapping[str, str]
    profile: str | None = None


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    text = " ".join(value.split())
    if not text:
        return None
    return text if len(text) <= MAX_NAME_LENGTH else text[: MAX_NAME_LENGTH - 1] + "…"


def masked_identifier(channel: str, external_id: str) -> str:
    """ "WhatsApp ···4321", "Web visitor ···9f2c": the channel and the id's last characters,
    enough to tell two customers apart in a list, never the whole id."""
    raw = external_id.split(":", 1)[1] if ":" in external_id else external_id
    tail = "".join(ch for ch in raw if ch.isalnum())[-_TAIL:]
    label = _CHANNEL_LABELS.get(channel, channel.capitalize() or "Customer")
    return f"{label} ···{tail}" if tail else label


def known_name(stated: Mapping[str, str], profile: str | None) -> str | None:
    """The stated name, else the channel's profile name; None when neither is known."""
    for key in NAME_FACT_KEYS:
        name = _clean(stated.get(key))
        if name:
            return name
    return _clean(profile)


def best_name(evidence: NameEvidence) -> str:
    return known_name(evidence.stated, evidence.profile) or masked_identifier(
        evidence.channel, evidence.external_id
    )
