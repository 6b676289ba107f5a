"""Web chat identity tokens: HS256 JWTs signed with the tenant's web chat secret.

`verify_identity_token` is deliberately total: any token it cannot fully trust yields ``None``
(the visitor is then anonymous) and the caller learns nothing about why. Debug logs name only the
category of failure, never the token, its claims or the secret.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import jwt

from identity.errors import IdentityConfigError, InvalidIdentifier
from identity.normalize import DEFAULT_REGION, normalize_opaque_id, normalize_phone, read_email

__all__ = ["MIN_SECRET_BYTES", "WebClaims", "check_webchat_secret", "verify_identity_token"]

_log = logging.getLogger(__name__)

# RFC 7518 §3.2: an HS256 key MUST be at least as long as the hash output.
MIN_SECRET_BYTES = 32
_MAX_TOKEN_CHARS = 8192
_DEFAULT_LEEWAY = timedelta(seconds=30)
_Value = TypeVar("_Value")


@dataclass(frozen=True, slots=True)
class WebClaims:
    """The claims of a valid identity token, normalized.

    ``phone``/``email`` are set only when the token marks them verified (``phone_number_verified``
    / ``email_verified`` is JSON ``true``); otherwise a well-formed value lands in
    ``asserted_phone``/``asserted_email`` and counts only as something the visitor claims. So
    does a verified e-mail whose normalization folded a character (`identity.NormalizedEmail`):
    the issuer verified the mailbox as written, not the one the folding names.
    """

    sub: str
    expires_at: datetime
    phone: str | None = None
    email: str | None = None
    asserted_phone: str | None = None
    asserted_email: str | None = None


def check_webchat_secret(secret: str) -> None:
    """Raise `IdentityConfigError` if ``secret`` is too short to verify HS256 tokens.

    Call it when configuration is loaded: `verify_identity_token` treats a short secret as
    unusable and returns ``None`` for every token.
    """
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise IdentityConfigError(
            f"the web chat secret must be at least {MIN_SECRET_BYTES} bytes for HS256"
        )


def verify_identity_token(
    token: str | None,
    secret: str,
    *,
    now: datetime | None = None,
    leeway: timedelta = _DEFAULT_LEEWAY,
    region: str | None = DEFAULT_REGION,
) -> WebClaims | None:
    """The claims of ``token`` if it is a valid identity token, else ``None``.

    Valid means: a compact JWS whose header says ``HS256`` (nothing else is accepted, ``none``
    included), signed with ``secret``, whose payload has a non-empty string ``sub`` and a numeric
    ``exp`` later than ``now`` (minus ``leeway``), and whose ``nbf``/``iat``, when present, are
    not in the future. ``aud`` and ``iss`` are not checked: the shared secret already binds the
    token to this tenant. Phones are normalized with ``region``; a malformed optional claim is
    dropped rather than failing the token.
    """
    # A compact JWS is ASCII; anything else is not a token (and would not encode).
    if not token or not secret or len(token) > _MAX_TOKEN_CHARS or not token.isascii():
        return None
    if len(secret.encode()) < MIN_SECRET_BYTES:
        _log.debug("identity token rejected: secret too short")
        return None
    current = (now or datetime.now(UTC)).timestamp()
    try:
        payload = jwt.decode(
            token,
            secret,
            algorithms=["HS256"],
            options={
                "require": ["exp", "sub"],
                # Time claims are checked below against the injected clock.
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
                "verify_aud": False,
                "verify_iss": False,
                "enforce_minimum_key_length": True,
            },
        )
    except jwt.PyJWTError as exc:
        _log.debug("identity token rejected: %s", type(exc).__name__)
        return None
    if not isinstance(payload, dict):
        return None
    try:
        return _claims(payload, current, leeway.total_seconds(), region)
    except (ValueError, OverflowError, OSError) as exc:  # InvalidIdentifier is a ValueError
        _log.debug("identity token rejected: %s", type(exc).__name__)
        return None


def _claims(payload: dict[str, Any], now: float, leeway: float, region: str | None) -> WebClaims:
    exp = _number(payload["exp"])
    if exp <= now - leeway:
        raise ValueError("expired")
    if "nbf" in payload and _number(payload["nbf"]) > now + leeway:
        raise ValueError("not yet valid")
    if "iat" in payload and _number(payload["iat"]) > now + leeway:
        raise ValueError("issued in the future")
    sub = payload["sub"]
    if not isinstance(sub, str):
        raise ValueError("sub is not a string")
    phone = _optional(payload.get("phone_number"), lambda raw: normalize_phone(raw, region=region))
    email = _optional(payload.get("email"), read_email)
    phone_verified = payload.get("phone_number_verified") is True
    address = email.value if email is not None else None
    folded = email is not None and email.folded
    email_verified = payload.get("email_verified") is True and not folded
    return WebClaims(
        sub=normalize_opaque_id(sub),
        expires_at=datetime.fromtimestamp(exp, UTC),
        phone=phone if phone_verified else None,
        email=address if email_verified else None,
        asserted_phone=None if phone_verified else phone,
        asserted_email=None if email_verified else address,
    )


def _number(value: object) -> float:
    # JSON numbers only; Python's json also parses NaN and Infinity, which never expire.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("time claim is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("time claim is not finite")
    return number


def _optional(raw: object, normalize: Callable[[str], _Value]) -> _Value | None:
    if not isinstance(raw, str):
        return None
    try:
        return normalize(raw)
    except InvalidIdentifier:
        return None
