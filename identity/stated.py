"""Phone numbers and e-mail addresses a customer writes in free text ("my number is …").

What is found here is only ever an *asserted* claim (`identity.observe(..., stated=...)`).
"""

from __future__ import annotations

import re

import phonenumbers

from identity.normalize import DEFAULT_REGION

__all__ = ["stated_values"]

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_MAX_FOUND = 10


def stated_values(text: str, *, region: str | None = DEFAULT_REGION) -> tuple[str, ...]:
    """The phone numbers (E.164) and e-mails in `text`, in order, at most ten."""
    found: list[str] = [match.group(0) for match in _EMAIL.finditer(text)]
    for match in phonenumbers.PhoneNumberMatcher(text, region or "ZZ"):
        found.append(phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164))
    return tuple(dict.fromkeys(found))[:_MAX_FOUND]
