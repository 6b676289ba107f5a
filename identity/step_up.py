"""Step-up verification, the rules: a one-time code sent to an identifier through a channel
where it is already verified, and what typing it back proves.

- A code goes only to an identifier one customer holds at verified level, through the channel
  identity that verified it (`code_route`); anything else gets no code, and the caller is told
  the same either way, so a number cannot be probed for being a customer.
- While a code waits for a conversation, any six digits in its next messages (``123456``,
  ``123 456``, ``123-456``) are an attempt (`codes_in`): they are taken out of the text before
  it is stored, so the code never reaches storage, a window or the model (`without_codes`).
- An attempt after the expiry, or past the attempts allowed, verifies nothing (`judge`).
- A verified code makes the channel identity verified (evidence ``otp:<channel>``) and joins
  it to the customer holding the identifier, by the verified-merge rules: the identity's own
  customer is merged in when nothing verified would move (it holds no verified identifier);
  otherwise the join is proposed to an operator and nothing is raised (`join_after`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from identity.levels import LinkLevel

__all__ = [
    "CODE_DIGITS",
    "STEP_UP_EVIDENCE",
    "MAX_ATTEMPTS",
    "Attempt",
    "CodeRoute",
    "Join",
    "VerifiedHolding",
    "code_route",
    "codes_in",
    "join_after",
    "judge",
    "otp_evidence",
    "without_codes",
]

CODE_DIGITS = 6
# The key of a channel identity's stored evidence that a one-time code verified it.
STEP_UP_EVIDENCE = "step_up"
MAX_ATTEMPTS = 3
CODE_MARKER = "[verification code]"
# Six digits, optionally split in two threes by a space, dot or dash, not inside a longer number.
_CODE = re.compile(r"(?<![\d])(\d{3})[ .\-]?(\d{3})(?![\d])")


def codes_in(text: str) -> tuple[str, ...]:
    """The six-digit codes ``text`` holds, in order."""
    return tuple(first + second for first, second in _CODE.findall(text))


def without_codes(text: str, outcome: str | None = None) -> str:
    """``text`` with every six-digit code replaced by a marker (naming what the code came to,
    when given: what the model reads of it)."""
    marker = f"[verification code: {outcome}]" if outcome is not None else CODE_MARKER
    return _CODE.sub(lambda _: marker, text)


class Attempt(StrEnum):
    """What one typed code came to."""

    VERIFIED = "verified"
    WRONG = "wrong"
    EXPIRED = "expired"
    LOCKED = "locked"  # the attempts were used up (this one or earlier)


def judge(*, matches: bool, attempts_before: int, expires_at: datetime, now: datetime) -> Attempt:
    """The outcome of an attempt, given the attempts already made on the code."""
    if attempts_before >= MAX_ATTEMPTS:
        return Attempt.LOCKED
    if now >= expires_at:
        return Attempt.EXPIRED
    if matches:
        return Attempt.VERIFIED
    return Attempt.LOCKED if attempts_before + 1 >= MAX_ATTEMPTS else Attempt.WRONG


@dataclass(frozen=True, slots=True)
class VerifiedHolding:
    """A customer holding the identifier, at its level, and the channel identity that proved
    it (None when no channel did, e.g. an identity token's claim)."""

    customer_id: str
    level: LinkLevel
    source_identity_id: str | None
    source_channel: str | None


@dataclass(frozen=True, slots=True)
class CodeRoute:
    """Where a code goes: the customer holding the identifier and the channel identity that
    verified it."""

    customer_id: str
    identity_id: str
    channel: str


# The channels a code can be sent through: those whose sender is the identifier's owner.
CODE_CHANNELS = frozenset({"whatsapp", "whatsapp_cloud", "telegram"})


def code_route(holdings: Iterable[VerifiedHolding]) -> CodeRoute | None:
    """The one route for a code, or None: nobody holds the identifier verified, more than
    one customer does (never guess between them), or no channel that proved it can carry a
    code."""
    verified = [h for h in holdings if h.level is LinkLevel.VERIFIED]
    if len({h.customer_id for h in verified}) != 1:
        return None
    for holding in verified:
        if holding.source_identity_id is not None and holding.source_channel in CODE_CHANNELS:
            return CodeRoute(
                holding.customer_id, holding.source_identity_id, holding.source_channel
            )
    return None


def otp_evidence(channel: str) -> str:
    """The evidence a verified code leaves on the channel identity."""
    return f"otp:{channel}"


@dataclass(frozen=True, slots=True)
class Join:
    """What a verified code does to the identity's customer: ``merge`` it into ``target``
    (the identity is raised to verified), or ``propose`` the join to an operator (nothing is
    raised), or nothing when it already is the target's."""

    target: str
    merge: bool
    propose: bool

    @property
    def raises(self) -> bool:
        """Whether the identity becomes verified."""
        return not self.propose


def join_after(*, identity_customer: str, target: str, identity_verified_count: int) -> Join:
    """Rule 3 and 4 of `identity.resolution` for a verified code: ``identity_verified_count`` is
    how many verified identifiers the identity's own customer holds (an anonymous visitor's
    customer holds none)."""
    if identity_customer == target:
        return Join(target, merge=False, propose=False)
    if identity_verified_count > 0:
        return Join(target, merge=False, propose=True)
    return Join(target, merge=True, propose=False)
