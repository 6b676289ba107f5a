"""WhatsApp's customer-service window, and the template variables that stand in for free text
outside it.

A business may send free-form messages on WhatsApp only within 24 hours of the customer's
last inbound message; outside that window only approved templates are delivered. Our clock
says when the window ends, but the provider has the last word: an answer meaning "outside the
window" (Twilio's 63016, the Cloud API's 131047) closes it whatever the clock says, until the
customer writes again.

Pure: the gateway reads `last_inbound_at` / `window_closed_at` from the conversation and the
customer's facts from storage, and sends or holds what these functions decide.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from identity.channels import IDENTITY_CHANNEL_OF

# The channels WhatsApp's rules apply to: every one that speaks for a WhatsApp identity
# (Twilio's and Meta's Cloud API).
WHATSAPP_CHANNELS = frozenset(
    name for name, speaks_for in IDENTITY_CHANNEL_OF.items() if speaks_for == "whatsapp"
)
WINDOW = timedelta(hours=24)
# Provider error codes that mean "outside the customer-service window".
WINDOW_CLOSED_CODES = frozenset({"63016", "131047"})
# A template variable spelled "=text" is that text, not a fact.
LITERAL_PREFIX = "="


@dataclass(frozen=True, slots=True)
class ServiceWindow:
    """Whether free-form messages may go now; `open_until` is 24 h after the customer's last
    inbound message (None: they never wrote); `closed_by_provider`: the provider said it is
    closed after that message."""

    open: bool
    open_until: datetime | None
    closed_by_provider: bool


def has_window(channel: str) -> bool:
    return channel in WHATSAPP_CHANNELS


def closes_window(error_code: str | None) -> bool:
    """Whether a provider error code means the window is closed."""
    return error_code is not None and error_code.strip() in WINDOW_CLOSED_CODES


def service_window(
    last_inbound_at: datetime | None, window_closed_at: datetime | None, now: datetime
) -> ServiceWindow:
    """The window at `now`: open until 24 h after `last_inbound_at` (exclusive), unless the
    provider closed it (`window_closed_at`) at or after that message."""
    if last_inbound_at is None:
        return ServiceWindow(False, None, window_closed_at is not None)
    open_until = last_inbound_at + WINDOW
    closed_by_provider = window_closed_at is not None and window_closed_at >= last_inbound_at
    return ServiceWindow(
        not closed_by_provider and now < open_until, open_until, closed_by_provider
    )


class MissingVariable(ValueError):
    """A template variable names a fact the customer does not have."""

    def __init__(self, placeholder: str, fact: str) -> None:
        super().__init__(f"variable {placeholder} needs the customer's {fact!r}, which is unknown")
        self.placeholder = placeholder
        self.fact = fact


def fill_variables(
    spec: Mapping[str, str],
    facts: Mapping[str, str],
    given: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The template's variables: each placeholder of `spec` filled from the fact it names
    (or its "=literal"), `given` values overriding (and adding) placeholders. Raises
    `MissingVariable` for a fact the customer has no value of and nobody gave."""
    given = given or {}
    filled: dict[str, str] = {}
    for placeholder, source in spec.items():
        if placeholder in given:
            continue
        if source.startswith(LITERAL_PREFIX):
            filled[placeholder] = source[len(LITERAL_PREFIX) :]
        elif facts.get(source):
            filled[placeholder] = facts[source]
        else:
            raise MissingVariable(placeholder, source)
    filled.update(given)
    return dict(sorted(filled.items(), key=lambda item: _placeholder_order(item[0])))


def _placeholder_order(placeholder: str) -> tuple[int, str]:
    """ "1", "2", …, "10" in number order; named placeholders after them."""
    return (int(placeholder), "") if placeholder.isdigit() else (1 << 30, placeholder)
