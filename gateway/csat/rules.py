"""When to ask the satisfaction question, and what counts as its answer.

Pure: the caller reads the tenant's setting, the conversation's WhatsApp window and whether a
survey was asked already in the episode, and acts on what these functions decide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from channels.base import Choice
from identity.service_window import has_window, service_window

SCORES = range(1, 6)
# The payload of a survey button ("csat:4"): what every channel's buttons carry back.
PAYLOAD_PREFIX = "csat:"
_BARE_DIGIT = re.compile(r"\s*([1-5])\s*\.?\s*")


class Trigger(StrEnum):
    HANDED_BACK = "handed_back"
    IDLE_CLOSE = "idle_close"


class Skip(StrEnum):
    """Why no question is asked."""

    SWITCHED_OFF = "switched_off"
    ASKED_IN_EPISODE = "asked_in_episode"
    WINDOW_CLOSED = "window_closed"


@dataclass(frozen=True, slots=True)
class AskDecision:
    ask: bool
    skip: Skip | None = None


def decide(
    *,
    enabled: bool,
    channel: str,
    asked_in_episode: bool,
    last_inbound_at: datetime | None,
    window_closed_at: datetime | None,
    now: datetime,
) -> AskDecision:
    """Ask at most once per episode, only when the tenant switched it on, and on WhatsApp only
    inside the 24-hour customer-service window (a question is free text, or an interactive
    message, both refused outside it)."""
    if not enabled:
        return AskDecision(False, Skip.SWITCHED_OFF)
    if asked_in_episode:
        return AskDecision(False, Skip.ASKED_IN_EPISODE)
    if has_window(channel) and not service_window(last_inbound_at, window_closed_at, now).open:
        return AskDecision(False, Skip.WINDOW_CLOSED)
    return AskDecision(True)


def button_payload(score: int) -> str:
    if score not in SCORES:
        raise ValueError(f"a score is 1-5, not {score}")
    return f"{PAYLOAD_PREFIX}{score}"


def survey_choices() -> tuple[Choice, ...]:
    """The buttons sent with the question: 1 to 5, each carrying its payload."""
    return tuple(Choice(str(score), button_payload(score)) for score in SCORES)


def read_answer(text: str | None) -> int | None:
    """The score in a button's payload ("csat:4") or a bare digit typed as the message ("4");
    None for anything else (the survey then closes unanswered and the message goes to the bot)."""
    if text is None:
        return None
    candidate = text.strip()
    if candidate.startswith(PAYLOAD_PREFIX):
        candidate = candidate[len(PAYLOAD_PREFIX) :]
    match = _BARE_DIGIT.fullmatch(candidate)
    return int(match.group(1)) if match else None
