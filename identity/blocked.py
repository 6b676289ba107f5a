"""Blocked values: placeholders and test numbers that must never link anything.

A blocked value is a perfectly well-formed identifier that many unrelated people (or test rigs)
share: ``null`` as an account id, Twilio's magic test numbers, ``+55 11 99999-9999`` typed into a
form, the nil UUID as a visitor cookie, Telegram's service accounts that stand in for anonymous
group admins and channels. Linking on one would join strangers, so the linking rules drop them.
The set is data: tenants extend it (or replace the defaults) through `BlockedValues.from_mapping`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import phonenumbers

from identity.errors import IdentityConfigError, InvalidIdentifier
from identity.normalize import (
    DEFAULT_REGION,
    ChannelIdentityKey,
    Identifier,
    normalize_email,
    normalize_phone,
    normalize_telegram_id,
)

__all__ = ["DEFAULT_BLOCKED", "DEFAULT_BLOCKED_TOKENS", "BlockedValues"]

# Compared case-folded against opaque ids, e-mail local parts and raw text.
DEFAULT_BLOCKED_TOKENS: frozenset[str] = frozenset(
    {
        "",
        "-1",
        "[object object]",
        "anon",
        "anonymous",
        "blocked",
        "changeme",
        "example",
        "guest",
        "n/a",
        "na",
        "nan",
        "nil",
        "no-reply",
        "nobody",
        "none",
        "noreply",
        "null",
        "private",
        "restricted",
        "test",
        "undefined",
        "unknown",
        "unavailable",
        "user",
        "withheld",
    }
)

_DEFAULT_PHONES = (
    # Twilio test credentials' magic numbers.
    *(f"+1500555000{digit}" for digit in range(10)),
    # Caller ids Twilio reports for withheld numbers (anonymous, restricted, blocked, unknown,
    # unavailable); some of them parse as possible numbers.
    "+266696687",
    "+7378742833",
    "+2562533",
    "+8656696",
    "+86282452253",
)
# Telegram senders that stand in for many people: service notifications, anonymous group
# admins (GroupAnonymousBot) and posts on behalf of a channel (Channel_Bot).
_DEFAULT_TELEGRAM = ("777000", "1087968824", "136817688")

DEFAULT_BLOCKED_IDENTIFIERS: frozenset[Identifier] = frozenset(
    [Identifier("phone", phone) for phone in _DEFAULT_PHONES]
    + [Identifier("telegram", user_id) for user_id in _DEFAULT_TELEGRAM]
)

_SEPARATORS = "-_.:/ {}"
_CONFIG_KEYS = frozenset(
    {"tokens", "phones", "emails", "telegram_ids", "repeated_digits", "replace_defaults"}
)


@dataclass(frozen=True, slots=True)
class BlockedValues:
    """Values that never link: placeholder words, exact identifiers and repeated-digit phones.

    ``repeated_digits``: a phone whose last N digits are one repeated digit (``99999-9999``,
    ``0000-0000``) is blocked; 0 turns the rule off. NANP fictional numbers (``555-0100`` to
    ``555-0199``) are always blocked.
    """

    tokens: frozenset[str] = DEFAULT_BLOCKED_TOKENS
    identifiers: frozenset[Identifier] = field(default=DEFAULT_BLOCKED_IDENTIFIERS)
    repeated_digits: int = 8

    def is_blocked(self, identifier: Identifier) -> bool:
        """Whether ``identifier`` (already normalized) must never link."""
        if identifier in self.identifiers:
            return True
        if identifier.kind == "phone":
            return self._is_blocked_phone(identifier.value)
        if identifier.kind == "email":
            local = identifier.value.split("@", 1)[0]
            return self.is_blocked_text(local)
        if identifier.kind == "telegram":
            return False
        return self.is_blocked_text(identifier.value)

    def is_blocked_key(self, key: ChannelIdentityKey) -> bool:
        """Whether the identifier behind a channel identity key is blocked."""
        return self.is_blocked(key.identifier)

    def is_blocked_text(self, raw: str | None) -> bool:
        """Whether raw text is a placeholder: missing, a blocked word, or only zeros/separators."""
        if raw is None:
            return True
        text = raw.strip().casefold()
        if text in self.tokens:
            return True
        # "0", "000000", "----", the nil UUID "00000000-0000-0000-0000-000000000000".
        return text.strip(_SEPARATORS + "0") == ""

    def _is_blocked_phone(self, e164: str) -> bool:
        digits = e164.lstrip("+")
        if not digits.isdigit():
            return True
        parts = _country_and_national(e164)
        if parts is None:
            return True
        country_code, national = parts
        if set(national) <= {"0"}:
            return True
        tail = national[-self.repeated_digits :] if self.repeated_digits else ""
        if self.repeated_digits and len(tail) == self.repeated_digits and len(set(tail)) == 1:
            return True
        # NANP numbers 555-0100 through 555-0199 are reserved for fiction.
        return country_code == 1 and national[3:6] == "555" and national[6:8] == "01"

    def extended(
        self, *, tokens: Iterable[str] = (), identifiers: Iterable[Identifier] = ()
    ) -> BlockedValues:
        """A copy that also blocks ``tokens`` (any case) and exact ``identifiers``."""
        return replace(
            self,
            tokens=self.tokens | {token.strip().casefold() for token in tokens},
            identifiers=self.identifiers | frozenset(identifiers),
        )

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, object], *, region: str | None = DEFAULT_REGION
    ) -> BlockedValues:
        """Load tenant configuration, on top of the defaults unless ``replace_defaults`` is true.

        Keys: ``tokens``, ``phones``, ``emails``, ``telegram_ids`` (lists), ``repeated_digits``
        (int, 0 to disable), ``replace_defaults`` (bool). Raises `IdentityConfigError`.
        """
        unknown = set(data) - _CONFIG_KEYS
        if unknown:
            raise IdentityConfigError(f"unknown blocked-values keys: {sorted(unknown)}")
        replace_defaults = data.get("replace_defaults", False)
        if not isinstance(replace_defaults, bool):
            raise IdentityConfigError("replace_defaults must be a boolean")
        repeated = data.get("repeated_digits", 8)
        if isinstance(repeated, bool) or not isinstance(repeated, int) or not 0 <= repeated <= 15:
            raise IdentityConfigError("repeated_digits must be an integer from 0 to 15")
        base = cls(tokens=frozenset(), identifiers=frozenset()) if replace_defaults else cls()
        try:
            identifiers = [
                *(
                    Identifier("phone", normalize_phone(p, region=region, strict=False))
                    for p in _strings(data, "phones")
                ),
                *(Identifier("email", normalize_email(e)) for e in _strings(data, "emails")),
                *(
                    Identifier("telegram", normalize_telegram_id(t))
                    for t in _strings(data, "telegram_ids", allow_int=True)
                ),
            ]
        except InvalidIdentifier as exc:
            raise IdentityConfigError(f"invalid blocked value: {exc}") from exc
        return replace(
            base.extended(tokens=_strings(data, "tokens"), identifiers=identifiers),
            repeated_digits=repeated,
        )


def _strings(data: Mapping[str, object], key: str, *, allow_int: bool = False) -> list[str]:
    values = data.get(key, [])
    if not isinstance(values, list | tuple):
        raise IdentityConfigError(f"{key} must be a list")
    out: list[str] = []
    for value in values:
        if allow_int and isinstance(value, int) and not isinstance(value, bool):
            out.append(str(value))
        elif isinstance(value, str):
            out.append(value)
        else:
            raise IdentityConfigError(f"{key} must hold strings")
    return out


DEFAULT_BLOCKED = BlockedValues()


# Checked for every identifier of every message: `phonenumbers` parses in pure Python, and a
# sender's number repeats (see `normalize._e164`).
@functools.lru_cache(maxsize=8192)
def _country_and_national(e164: str) -> tuple[int, str] | None:
    """The country code and national significant number of ``e164``; None if unparsable."""
    try:
        number = phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        return None
    return int(number.country_code or 0), phonenumbers.national_significant_number(number)
