"""Normalized identifiers and channel identity keys.

Every identifier is reduced to one canonical spelling before it is compared, stored or linked:
phones to E.164 (via ``phonenumbers``), e-mails to their local part as written (ASCII letters
lower-cased) at their IDNA-encoded domain, Telegram user ids to their decimal form, web accounts
and anonymous visitors to opaque trimmed strings. Anything that cannot be normalized raises
`InvalidIdentifier`. Whether a normalized value is *blocked* is a separate question, answered
by `identity.blocked.BlockedValues`.

Normalizing never merges two mailboxes: Unicode case folding would (``ß``→``ss``, ``ſ``→``s``,
the Kelvin sign to ``k``, ``ς``→``σ``), so local parts only lose ASCII case, and domains go
through IDNA 2008 with UTS 46 mapping, which keeps ``straße.de`` apart from ``strasse.de``.
Where that mapping still folds a character (full-width letters, ``ſ``, ``ﬁ``, Unicode
capitals), `read_email` says so, and the value proves nothing about that mailbox.
"""

from __future__ import annotations

import functools
import re
import string
from dataclasses import dataclass
from typing import Literal, get_args

import idna
import phonenumbers

from identity.channels import (
    IDENTITY_CHANNELS,
    ChannelName,
    IdentityChannel,
    identity_channel,
    is_channel_name,
)
from identity.errors import InvalidIdentifier

__all__ = [
    "DEFAULT_REGION",
    "Channel",
    "ChannelIdentityKey",
    "IdentityChannel",
    "Identifier",
    "IdentifierKind",
    "NormalizedEmail",
    "channel_identity_key",
    "decimal_id",
    "normalize_email",
    "normalize_identifier",
    "normalize_opaque_id",
    "normalize_phone",
    "normalize_telegram_id",
    "read_email",
    "stated_identifier",
]

DEFAULT_REGION = "BR"

# Every channel a message arrives on (`identity.channels`); its identity keys are those of
# its identity channel (`whatsapp_cloud` speaks for `whatsapp`).
Channel = ChannelName
IdentifierKind = Literal["phone", "email", "telegram", "web_account", "web_anon", "call"]

# The channels an identity key may name.
CHANNELS: frozenset[str] = frozenset(IDENTITY_CHANNELS)
IDENTIFIER_KINDS: frozenset[str] = frozenset(get_args(IdentifierKind))

# Which identifier kinds may key a channel identity, and the external-id prefix of each pair.
_KEY_PREFIXES: dict[tuple[IdentityChannel, IdentifierKind], str] = {
    ("whatsapp", "phone"): "whatsapp:",
    ("telegram", "telegram"): "telegram:",
    ("webchat", "web_account"): "web:acct:",
    ("webchat", "web_anon"): "web:anon:",
    ("phone", "phone"): "phone:",
    ("phone", "call"): "phone:call:",
}
# Longest prefix first so that "phone:call:" wins over "phone:".
_PREFIX_TO_PAIR: list[tuple[str, tuple[IdentityChannel, IdentifierKind]]] = sorted(
    ((prefix, pair) for pair, prefix in _KEY_PREFIXES.items()), key=lambda item: -len(item[0])
)

_URI_PREFIXES = ("whatsapp:", "tel:", "phone:", "sms:")
_MAX_PHONE_INPUT = 64
_MAX_OPAQUE = 255
_MAX_ID = 2**63 - 1
_MAX_ID_DIGITS = len(str(_MAX_ID))
# An IDNA-encoded domain label: letters, digits and inner hyphens (A-labels are "xn--" LDH).
_DOMAIN_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# Only ASCII letters change: str.lower() would also fold the Kelvin sign into "k".
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_MAILTO = "mailto:"


@dataclass(frozen=True, slots=True, order=True)
class Identifier:
    """A normalized identifier: ``kind`` plus its canonical ``value``.

    Construct through `normalize_identifier` (or the ``normalize_*`` functions) from raw input;
    direct construction is for values that are already canonical, e.g. rows read from storage.
    """

    kind: IdentifierKind
    value: str

    def __post_init__(self) -> None:
        if self.kind not in IDENTIFIER_KINDS:
            raise InvalidIdentifier(f"unknown identifier kind {self.kind!r}")
        if not isinstance(self.value, str) or not self.value:
            raise InvalidIdentifier(f"empty {self.kind} identifier")

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


@dataclass(frozen=True, slots=True, order=True)
class ChannelIdentityKey:
    """A channel identity: the channel plus the identifier the channel delivers.

    ``str(key)`` is the stable external id, ``<channel>:<identifier>`` (``whatsapp:+5511…``,
    ``telegram:12345``, ``web:acct:<sub>``, ``web:anon:<cookie>``, ``phone:+5511…``,
    ``phone:call:<call id>`` for a call without a usable caller id); `ChannelIdentityKey.parse`
    reads it back.
    """

    channel: IdentityChannel
    identifier: Identifier

    def __post_init__(self) -> None:
        if (self.channel, self.identifier.kind) not in _KEY_PREFIXES:
            raise InvalidIdentifier(
                f"a {self.identifier.kind} identifier cannot key the {self.channel!r} channel"
            )

    def __str__(self) -> str:
        return _KEY_PREFIXES[(self.channel, self.identifier.kind)] + self.identifier.value

    @classmethod
    def parse(cls, external_id: str) -> ChannelIdentityKey:
        """Read back ``str(key)``; the value must already be canonical."""
        for prefix, (channel, kind) in _PREFIX_TO_PAIR:
            if external_id.startswith(prefix):
                raw = external_id[len(prefix) :]
                key = cls(channel, _key_identifier(kind, raw, region=None))
                if key.identifier.value != raw:
                    raise InvalidIdentifier("external id is not in canonical form")
                return key
        raise InvalidIdentifier("unknown external id prefix")


def normalize_phone(raw: str, *, region: str | None = DEFAULT_REGION, strict: bool = True) -> str:
    """``raw`` as E.164 (``+5511987654321``).

    Accepts ``whatsapp:``/``tel:`` prefixes, punctuation and spaces, national numbers in
    ``region`` and Brazilian mobiles written without the ninth digit (still how WhatsApp reports
    many older accounts), which are rewritten with it so both spellings link. ``strict`` requires
    a number valid for its region's numbering plan; ``strict=False`` only a possible length, for
    numbers a carrier already delivered (so a gap in the metadata cannot drop a real sender).
    """
    if not isinstance(raw, str):
        raise InvalidIdentifier("phone number must be a string")
    text = raw.strip()
    lowered = text.lower()
    for prefix in _URI_PREFIXES:
        if lowered.startswith(prefix):
            text = text[len(prefix) :].strip()
            break
    text = text.split(";", 1)[0]  # tel: URI parameters (";ext=", ";phone-context=")
    if not text or len(text) > _MAX_PHONE_INPUT:
        raise InvalidIdentifier("phone number is empty or too long")
    return _e164(text, region, strict)


# Every message of a known sender normalizes the same few numbers, and `phonenumbers` parses in
# pure Python (a tenth of a millisecond each): the valid results are kept, keyed by the text.
@functools.lru_cache(maxsize=8192)
def _e164(text: str, region: str | None, strict: bool) -> str:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException as exc:
        raise InvalidIdentifier("not a phone number") from exc
    number = _with_brazilian_ninth_digit(number)
    if strict:
        ok = phonenumbers.is_valid_number(number)
    else:
        ok = phonenumbers.is_possible_number(number)
    if not ok or number.extension:
        raise InvalidIdentifier("not a valid phone number")
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _with_brazilian_ninth_digit(number: phonenumbers.PhoneNumber) -> phonenumbers.PhoneNumber:
    # Since 2016 every Brazilian mobile has 9 subscriber digits starting with 9; an 8-digit
    # subscriber number starting with 6-9 can only be an old-style mobile spelling.
    national = str(number.national_number)
    if number.country_code == 55 and len(national) == 10 and national[2] in "6789":
        return phonenumbers.PhoneNumber(
            country_code=55, national_number=int(national[:2] + "9" + national[2:])
        )
    return number


@dataclass(frozen=True, slots=True)
class NormalizedEmail:
    """An e-mail address in canonical form, and whether reaching it folded a character.

    ``folded`` is true when the domain's UTS 46 mapping changed more than ASCII case or the
    encoding of a label (``ｅｘａｍｐｌｅ.com``, ``ſtrasse.de``, ``ﬁsh.com``, ``MÜNCHEN.de``):
    the canonical ``value`` then names a mailbox the sender did not spell, so it may be
    proposed to an operator but never links on its own.
    """

    value: str
    folded: bool


def read_email(raw: str) -> NormalizedEmail:
    """``raw`` as a canonical address: trimmed, a ``mailto:`` prefix dropped, the local part as
    written but for ASCII case, the domain IDNA-encoded (IDNA 2008, UTS 46, ASCII labels only
    letters, digits and hyphens). Raises `InvalidIdentifier` for anything else."""
    if not isinstance(raw, str):
        raise InvalidIdentifier("e-mail must be a string")
    text = raw.strip()
    if text[: len(_MAILTO)].translate(_ASCII_LOWER) == _MAILTO:
        text = text[len(_MAILTO) :]
    if len(text) > 254 or text.count("@") != 1:
        raise InvalidIdentifier("not an e-mail address")
    written_local, written_domain = text.split("@")
    local = written_local.translate(_ASCII_LOWER)
    if not local or len(local) > 64 or ".." in local or local[0] == "." or local[-1] == ".":
        raise InvalidIdentifier("not an e-mail address")
    if any(ch.isspace() or not ch.isprintable() or ch in '<>()[],;:\\"' for ch in local):
        raise InvalidIdentifier("not an e-mail address")
    domain = _ascii_domain(written_domain)
    value = f"{local}@{domain}"
    if len(value) > 254:
        raise InvalidIdentifier("not an e-mail address")
    return NormalizedEmail(value, folded=not _spelled_as(written_domain, domain))


def normalize_email(raw: str) -> str:
    """``raw`` as a canonical address (see `read_email`)."""
    return read_email(raw).value


def _ascii_domain(written: str) -> str:
    try:
        encoded = idna.encode(written, uts46=True, std3_rules=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise InvalidIdentifier("not an e-mail domain") from exc
    labels = encoded.split(".")
    if len(labels) < 2 or not all(_DOMAIN_LABEL.match(label) for label in labels):
        raise InvalidIdentifier("not an e-mail domain")
    if labels[-1].isdigit():
        raise InvalidIdentifier("not an e-mail domain")
    return encoded


def _spelled_as(written: str, encoded: str) -> bool:
    """Whether each label of ``encoded`` is the written one, up to ASCII case, either as
    written (``xn--strae-oqa``) or as the Unicode it encodes (``straße``)."""
    labels = encoded.split(".")
    said = written.translate(_ASCII_LOWER).split(".")
    if len(said) != len(labels):
        return False  # another dot (U+3002, a full stop) was mapped to "."
    for label, spelled in zip(labels, said, strict=True):
        if spelled == label:
            continue
        try:
            if spelled != idna.decode(label):
                return False
        except (idna.IDNAError, UnicodeError):
            return False
    return True


def decimal_id(text: str) -> int | None:
    """``text`` as a non-negative id that fits a signed 64-bit column, or None.

    Only ASCII digits count: ``"²".isdigit()`` is true and ``int("²")`` refuses it, and a
    5,000-digit number must not reach ``int`` (or the database) at all."""
    if not text or len(text) > _MAX_ID_DIGITS or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= _MAX_ID else None


def normalize_telegram_id(raw: int | str) -> str:
    """A Telegram user id as its decimal string; users have positive ids (chats are negative)."""
    if isinstance(raw, bool):
        raise InvalidIdentifier("telegram user id must be an integer")
    if isinstance(raw, str):
        parsed = decimal_id(raw.strip())
        if parsed is None:
            raise InvalidIdentifier("telegram user id must be a positive integer")
        raw = parsed
    if not isinstance(raw, int) or not 0 < raw <= _MAX_ID:
        raise InvalidIdentifier("telegram user id must be a positive integer")
    return str(raw)


def normalize_opaque_id(raw: str) -> str:
    """An opaque id (web account ``sub``, visitor cookie, call id): trimmed, printable, no spaces.

    Case is kept: OIDC ``sub`` values are case-sensitive.
    """
    if not isinstance(raw, str):
        raise InvalidIdentifier("id must be a string")
    text = raw.strip()
    if not text or len(text) > _MAX_OPAQUE:
        raise InvalidIdentifier("id is empty or too long")
    if not text.isprintable() or any(ch.isspace() for ch in text):
        raise InvalidIdentifier("id contains spaces or control characters")
    return text


def normalize_identifier(
    kind: IdentifierKind, raw: str | int, *, region: str | None = DEFAULT_REGION
) -> Identifier:
    """Normalize ``raw`` as an identifier of ``kind`` (phones strictly validated)."""
    if kind == "telegram":
        return Identifier(kind, normalize_telegram_id(raw))
    if not isinstance(raw, str):
        raise InvalidIdentifier(f"{kind} identifier must be a string")
    if kind == "phone":
        return Identifier(kind, normalize_phone(raw, region=region))
    if kind == "email":
        return Identifier(kind, normalize_email(raw))
    if kind in ("web_account", "web_anon", "call"):
        return Identifier(kind, normalize_opaque_id(raw))
    raise InvalidIdentifier(f"unknown identifier kind {kind!r}")


def stated_identifier(raw: str, *, region: str | None = DEFAULT_REGION) -> Identifier:
    """A phone number or e-mail someone typed or said: an e-mail if it has an ``@``."""
    if "@" in raw:
        return Identifier("email", normalize_email(raw))
    return Identifier("phone", normalize_phone(raw, region=region))


def channel_identity_key(
    channel: Channel, external_id: str | int, *, region: str | None = DEFAULT_REGION
) -> ChannelIdentityKey:
    """The key of ``external_id`` as delivered on ``channel``, normalized.

    Accepts both prefixed external ids (``str(ChannelIdentityKey)``) and bare provider values:
    a Twilio ``From`` (``whatsapp:+55…``) or number for WhatsApp, a user id for Telegram, a
    caller number for phone. A bare web chat id is an anonymous visitor: accounts come only
    from a verified identity token (``web:acct:`` is accepted here only when already prefixed).
    """
    if not is_channel_name(channel):
        raise InvalidIdentifier(f"unknown channel {channel!r}")
    speaks_for = identity_channel(channel)
    if isinstance(external_id, str):
        for prefix, (key_channel, kind) in _PREFIX_TO_PAIR:
            if key_channel == speaks_for and external_id.startswith(prefix):
                raw = external_id[len(prefix) :]
                return ChannelIdentityKey(speaks_for, _key_identifier(kind, raw, region))
    bare_kind: dict[IdentityChannel, IdentifierKind] = {
        "whatsapp": "phone",
        "telegram": "telegram",
        "webchat": "web_anon",
        "phone": "phone",
    }
    kind = bare_kind[speaks_for]
    return ChannelIdentityKey(speaks_for, _key_identifier(kind, external_id, region))


def _key_identifier(kind: IdentifierKind, raw: str | int, region: str | None) -> Identifier:
    if kind == "phone":
        if not isinstance(raw, str):
            raise InvalidIdentifier("phone number must be a string")
        # The carrier delivered this number, so a possible number is enough (see normalize_phone).
        return Identifier("phone", normalize_phone(raw, region=region, strict=False))
    return normalize_identifier(kind, raw, region=region)
