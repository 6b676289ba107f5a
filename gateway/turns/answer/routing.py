"""Who answers a turn: the bot, a person already (nothing is sent), or a person from now on
(the conversation handed over and the customer told). Pure: decided from what was read with
the turn."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from identity.conversation_owner import Owner, asks_for_human

# Why a conversation is handed to a human (the audit's reason and the events').
ASKED_BY_CUSTOMER = "the customer asked for a person"
MODEL_FAILED = "the model failed repeatedly"
MODEL_MARKER = "the model asked for a person"
# Why a turn is left to a person without a reply.
HELD_BY_OPERATOR = "an operator holds the conversation"
WAITING_FOR_PERSON = "a person was asked for"


class Route(StrEnum):
    ANSWER = "answer"
    LEAVE_TO_HUMAN = "leave_to_human"
    HAND_OVER = "hand_over"


@dataclass(frozen=True, slots=True)
class Routing:
    route: Route
    reason: str | None = None


ANSWER = Routing(Route.ANSWER)


def route_turn(owner: str, text: str, handoff_phrases: Iterable[str]) -> Routing:
    """`owner`: the conversation's owner as read with the turn; `text`: the customer's
    message; `handoff_phrases`: the tenant's phrases that ask for a person."""
    if owner != Owner.BOT:
        reason = WAITING_FOR_PERSON if owner == Owner.WAITING else HELD_BY_OPERATOR
        return Routing(Route.LEAVE_TO_HUMAN, reason)
    if asks_for_human(text, handoff_phrases):
        return Routing(Route.HAND_OVER, ASKED_BY_CUSTOMER)
    return ANSWER
