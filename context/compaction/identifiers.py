"""Validation and normalization of identifiers found in text: CPF, CNPJ, phone, CEP, e-mail,
random Pix keys; and the masking of such identifiers in text that leaves the scope policy.

Values are normalized so equal identifiers compare equal however they were typed: CPF and CNPJ
as digits only, phones as E.164, CEP as ``01310-100``, e-mail and UUIDs case-folded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import phonenumbers

__all__ = [
    "DEFAULT_REGION",
    "is_cnpj",
    "is_cpf",
    "mask_identifiers",
    "normalize_cep",
    "normalize_cnpj",
    "normalize_cpf",
    "normalize_email",
    "normalize_phone",
    "normalize_uuid",
]

# Region assumed for phone numbers written without a country code.
DEFAULT_REGION: Final = "BR"

_NON_DIGIT: Final = re.compile(r"\D")
_EMAIL: Final = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}")
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def _digits(text: str) -> str:
    return _NON_DIGIT.sub("", text)


def is_cpf(text: str) -> bool:
    """True when ``text`` has 11 digits (punctuation ignored) whose check digits are valid."""
    digits = _digits(text)
    if len(digits) != 11 or digits == digits[0] * 11:
        return False
    numbers = [int(d) for d in digits]
    for size in (9, 10):
        total = sum(n * w for n, w in zip(numbers[:size], range(size + 1, 1, -1), strict=True))
        check = (total * 10) % 11 % 10
        if check != numbers[size]:
            return False
    return True


_CNPJ_WEIGHTS: Final = (
    (5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2),
    (6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2),
)


def is_cnpj(text: str) -> bool:
    """True when ``text`` has 14 digits (punctuation ignored) whose check digits are valid."""
    digits = _digits(text)
    if len(digits) != 14 or digits == digits[0] * 14:
        return False
    numbers = [int(d) for d in digits]
    for weights in _CNPJ_WEIGHTS:
        size = len(weights)
        remainder = sum(n * w for n, w in zip(numbers[:size], weights, strict=True)) % 11
        check = 0 if remainder < 2 else 11 - remainder
        if check != numbers[size]:
            return False
    return True


def normalize_cpf(text: str) -> str | None:
    return _digits(text) if is_cpf(text) else None


def normalize_cnpj(text: str) -> str | None:
    return _digits(text) if is_cnpj(text) else None


def normalize_phone(text: str, region: str = DEFAULT_REGION) -> str | None:
    """E.164 form of a valid phone number, or None; numbers without ``+`` are read in ``region``."""
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def normalize_cep(text: str) -> str | None:
    """``01310-100`` from ``01310-100`` or ``01310100``; None unless exactly 8 digits."""
    digits = _digits(text)
    if len(digits) != 8:
        return None
    return f"{digits[:5]}-{digits[5:]}"


def normalize_email(text: str) -> str | None:
    value = text.strip().strip(".").casefold()
    return value if _EMAIL.fullmatch(value) else None


def normalize_uuid(text: str) -> str | None:
    value = text.strip().casefold()
    return value if _UUID.fullmatch(value) else None


# Masking: spans that identify a person or an account, replaced by a typed placeholder. Applied
# to summary sentences, which reach every window of the customer regardless of the scopes its
# identity link allows; the values themselves live on as scoped facts.
_MASKS: Final = (
    ("email", _EMAIL),
    ("pix_key", re.compile(rf"(?<![\w-]){_UUID.pattern}(?![\w-])")),
    ("document", re.compile(r"(?<![\d./-])\d{2}\.?\d{3}\.?\d{3}/?\d{4}-?\d{2}(?![\d/-]|\.\d)")),
    ("document", re.compile(r"(?<![\d./-])\d{3}\.?\d{3}\.?\d{3}-?\d{2}(?![\d/-]|\.\d)")),
    (
        "phone",
        re.compile(
            r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,3}\)\s?|\d{2,3}[\s.-])?"
            r"\d{4,5}[\s.-]?\d{4}(?![\w-])"
        ),
    ),
    ("postal_code", re.compile(r"(?<![\d-])\d{5}-\d{3}(?![\d-])")),
)


def _mask_match(kind: str, match: re.Match[str], region: str) -> str:
    raw = match.group(0)
    if kind == "document" and not (is_cpf(raw) or is_cnpj(raw)):
        return raw
    if kind == "phone" and normalize_phone(raw, region) is None:
        return raw
    return f"[{kind}]"


def mask_identifiers(
    text: str, extra: Iterable[tuple[str, str]] = (), region: str = DEFAULT_REGION
) -> str:
    """``text`` with e-mails, valid CPF/CNPJ, valid phones, UUIDs and CEPs replaced by ``[kind]``
    placeholders, and each ``(value, kind)`` of ``extra`` (e.g. extracted order ids) by ``[kind]``.
    """
    for value, kind in sorted(set(extra), key=lambda item: (-len(item[0]), item)):
        if len(value) >= 3:
            literal = re.compile(rf"(?<![\w-]){re.escape(value)}(?![\w-])", re.IGNORECASE)
            text = literal.sub(f"[{kind}]", text)
    for kind, pattern in _MASKS:

        def replace(match: re.Match[str], kind: str = kind) -> str:
            return _mask_match(kind, match, region)

        text = pattern.sub(replace, text)
    return text
