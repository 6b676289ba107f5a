"""Who answers a conversation: the bot, nobody yet (a human was asked for) or one operator.

Pure: an ownership and an event give the next ownership, or a refusal that leaves it as it
was. The bot replies only while it owns the conversation (`bot_may_reply`); every way of
asking for a human (the customer's words, repeated model failures, the model's own marker)
moves a bot conversation to waiting, and only an operator's hand-back returns it to the bot.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "BOT",
    "AskedForHuman",
    "Event",
    "HandedBack",
    "Owner",
    "Ownership",
    "Refused",
    "Took",
    "apply",
    "asks_for_human",
    "bot_may_reply",
    "strip_marker",
]


class Owner(StrEnum):
    BOT = "bot"
    WAITING = "waiting"  # a human was asked for; no operator took it yet
    HUMAN = "human"  # an operator holds it


@dataclass(frozen=True, slots=True)
class Ownership:
    owner: Owner
    held_by: str | None = None  # the operator, while `owner` is HUMAN

    def __post_init__(self) -> None:
        if (self.owner is Owner.HUMAN) != (self.held_by is not None):
            raise ValueError("an operator holds a conversation exactly when a human owns it")


BOT = Ownership(Owner.BOT)


@dataclass(frozen=True, slots=True)
class AskedForHuman:
    """The customer asked for a person, the model failed repeatedly, or the model answered
    with the handoff marker (`why` says which)."""

    why: str


@dataclass(frozen=True, slots=True)
class Took:
    """An operator takes the conversation (from the bot, from waiting, or again)."""

    actor: str


@dataclass(frozen=True, slots=True)
class HandedBack:
    """An operator returns the conversation to the bot."""

    actor: str


Event = AskedForHuman | Took | HandedBack


@dataclass(frozen=True, slots=True)
class Refused:
    """The event does not apply; the ownership stays as it was."""

    code: str
    detail: str


def bot_may_reply(ownership: Ownership) -> bool:
    return ownership.owner is Owner.BOT


def apply(ownership: Ownership, event: Event) -> Ownership | Refused:
    """The ownership after `event`, or why it is refused."""
    if isinstance(event, AskedForHuman):
        # Waiting or held already: asking again changes nothing.
        return Ownership(Owner.WAITING) if ownership.owner is Owner.BOT else ownership
    if isinstance(event, Took):
        if ownership.owner is Owner.HUMAN and ownership.held_by != event.actor:
            return Refused("held_by_other", f"the conversation is held by {ownership.held_by}")
        return Ownership(Owner.HUMAN, event.actor)
    if ownership.owner is Owner.HUMAN and ownership.held_by != event.actor:
        return Refused("held_by_other", f"the conversation is held by {ownership.held_by}")
    return BOT


def _folded(text: str) -> str:
    """Lower case, accents removed, runs of space and punctuation made one space."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w]+", " ", plain).split())


def asks_for_human(text: str, phrases: Iterable[str]) -> bool:
    """Whether the customer's `text` contains one of `phrases` as whole words (case, accents
    and punctuation ignored): "Quero falar com um atendente!" matches "falar com um atendente"."""
    said = f" {_folded(text)} "
    return any(
        folded and f" {folded} " in said for folded in (_folded(phrase) for phrase in phrases)
    )


def strip_marker(text: str, marker: str) -> tuple[str, bool]:
    """The model's reply without the handoff `marker`, and whether it carried it."""
    if not marker or marker not in text:
        return text, False
    return re.sub(r"[ \t]{2,}", " ", text.replace(marker, "")).strip(), True
