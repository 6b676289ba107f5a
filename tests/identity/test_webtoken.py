from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from identity import (
    IdentityConfigError,
    WebClaims,
    check_webchat_secret,
    verify_identity_token,
)

SECRET = "relaydesk-webchat-test-secret-0123456789"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EXP = int((NOW + timedelta(hours=1)).timestamp())


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def craft(
    payload: dict[str, Any] | bytes,
    *,
    alg: str = "HS256",
    key: str | None = SECRET,
    digest: Any = hashlib.sha256,
    header: dict[str, Any] | None = None,
) -> str:
    """A compact JWS built by hand, so tests control every byte (and no library refuses)."""
    head = b64(json.dumps(header or {"alg": alg, "typ": "JWT"}).encode())
    body = b64(payload if isinstance(payload, bytes) else json.dumps(payload).encode())
    signing_input = f"{head}.{body}".encode()
    signature = b"" if key is None else hmac.new(key.encode(), signing_input, digest).digest()
    return f"{head}.{body}.{b64(signature)}"


def verify(token: str | None, **kwargs: Any) -> WebClaims | None:
    return verify_identity_token(token, SECRET, now=NOW, **kwargs)


def test_minimal_valid_token() -> None:
    claims = verify(craft({"sub": "acct-42", "exp": EXP}))
    assert claims == WebClaims(sub="acct-42", expires_at=datetime.fromtimestamp(EXP, UTC))


def test_token_made_by_pyjwt_is_accepted() -> None:
    token = jwt.encode({"sub": "acct-42", "exp": EXP}, SECRET, algorithm="HS256")
    claims = verify(token)
    assert claims is not None and claims.sub == "acct-42"


def test_verified_phone_and_email_are_normalized() -> None:
    token = craft(
        {
            "sub": "acct-42",
            "exp": EXP,
            "phone_number": "+55 (11) 98765-4321",
            "phone_number_verified": True,
            "email": "Ana@Example.com",
            "email_verified": True,
        }
    )
    claims = verify(token)
    assert claims is not None
    assert (claims.phone, claims.email) == ("+5511987654321", "ana@example.com")
    assert (claims.asserted_phone, claims.asserted_email) == (None, None)


@pytest.mark.parametrize(
    ("email", "verified", "asserted"),
    [
        ("ana@straße.de", "ana@xn--strae-oqa.de", None),
        ("Ana@Example.COM", "ana@example.com", None),
        # The issuer verified the mailbox as written; the folding names another one.
        ("ana@\u017ftrasse.de", None, "ana@strasse.de"),
        ("ana@ｅｘａｍｐｌｅ.com", None, "ana@example.com"),
    ],
)
def test_a_verified_email_the_normalization_folded_is_only_asserted(
    email: str, verified: str | None, asserted: str | None
) -> None:
    claims = verify(craft({"sub": "acct-42", "exp": EXP, "email": email, "email_verified": True}))
    assert claims is not None
    assert (claims.email, claims.asserted_email) == (verified, asserted)


@pytest.mark.parametrize("flag", [False, "true", 1, None, "missing"])
def test_unverified_contact_claims_are_only_asserted(flag: object) -> None:
    payload: dict[str, Any] = {
        "sub": "acct-42",
        "exp": EXP,
        "phone_number": "+5511987654321",
        "email": "ana@example.com",
    }
    if flag != "missing":
        payload["phone_number_verified"] = flag
        payload["email_verified"] = flag
    claims = verify(craft(payload))
    assert claims is not None
    assert (claims.phone, claims.email) == (None, None)
    assert (claims.asserted_phone, claims.asserted_email) == ("+5511987654321", "ana@example.com")


def test_malformed_optional_claims_are_dropped_not_fatal() -> None:
    token = craft(
        {
            "sub": "acct-42",
            "exp": EXP,
            "phone_number": "call me",
            "phone_number_verified": True,
            "email": ["ana@example.com"],
            "email_verified": True,
        }
    )
    claims = verify(token)
    assert claims is not None
    assert (claims.phone, claims.email, claims.asserted_phone, claims.asserted_email) == (
        None,
        None,
        None,
        None,
    )


def test_audience_and_issuer_are_not_required_to_match() -> None:
    claims = verify(craft({"sub": "a", "exp": EXP, "aud": "shop", "iss": "https://id.example"}))
    assert claims is not None and claims.sub == "a"


def _none_token(alg: str) -> str:
    return craft({"sub": "acct-42", "exp": EXP}, alg=alg, key=None)


REJECTED = {
    "missing": None,
    "empty": "",
    "garbage": "not-a-token",
    "three dots of garbage": "a.b.c",
    "huge": craft({"sub": "acct-42", "exp": EXP, "pad": "x" * 9000}),
    "forged signature": craft({"sub": "acct-42", "exp": EXP}, key="another-secret-" * 3),
    "tampered payload": ".".join(
        [
            craft({"sub": "acct-42", "exp": EXP}).split(".")[0],
            b64(json.dumps({"sub": "acct-1", "exp": EXP}).encode()),
            craft({"sub": "acct-42", "exp": EXP}).split(".")[2],
        ]
    ),
    "alg none": _none_token("none"),
    "alg None": _none_token("None"),
    "alg NONE": _none_token("NONE"),
    "alg none with a signature": craft({"sub": "acct-42", "exp": EXP}, alg="none"),
    "HS512": craft({"sub": "acct-42", "exp": EXP}, alg="HS512", digest=hashlib.sha512),
    "HS384": craft({"sub": "acct-42", "exp": EXP}, alg="HS384", digest=hashlib.sha384),
    # Key confusion: an asymmetric alg name over an HMAC made with the shared secret.
    "RS256": craft({"sub": "acct-42", "exp": EXP}, alg="RS256"),
    "ES256": craft({"sub": "acct-42", "exp": EXP}, alg="ES256"),
    "no alg": craft({"sub": "acct-42", "exp": EXP}, header={"typ": "JWT"}),
    "expired": craft({"sub": "acct-42", "exp": int(NOW.timestamp()) - 3600}),
    "missing exp": craft({"sub": "acct-42"}),
    "missing sub": craft({"exp": EXP}),
    "null sub": craft({"sub": None, "exp": EXP}),
    "empty sub": craft({"sub": "  ", "exp": EXP}),
    "numeric sub": craft({"sub": 42, "exp": EXP}),
    "string exp": craft({"sub": "acct-42", "exp": str(EXP)}),
    "boolean exp": craft({"sub": "acct-42", "exp": True}),
    "infinite exp": craft(b'{"sub": "acct-42", "exp": Infinity}'),
    "NaN exp": craft(b'{"sub": "acct-42", "exp": NaN}'),
    "not yet valid": craft({"sub": "acct-42", "exp": EXP, "nbf": EXP - 60}),
    "issued in the future": craft({"sub": "acct-42", "exp": EXP, "iat": EXP - 60}),
    "payload not an object": craft(b'["acct-42"]'),
    "unsupported crit header": craft(
        {"sub": "acct-42", "exp": EXP}, header={"alg": "HS256", "crit": ["exp"], "exp": 1}
    ),
}


@pytest.mark.parametrize("token", list(REJECTED.values()), ids=list(REJECTED))
def test_untrustworthy_tokens_yield_none_without_a_reason(
    token: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="identity")
    assert verify(token) is None
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert SECRET not in logged
    if token:
        for segment in token.split("."):
            assert len(segment) < 8 or segment not in logged


def test_expiry_honours_leeway_and_the_injected_clock() -> None:
    token = craft({"sub": "acct-42", "exp": int(NOW.timestamp()) - 10})
    assert verify(token) is not None  # within the default 30 s leeway
    assert verify(token, leeway=timedelta(0)) is None
    assert verify_identity_token(token, SECRET, now=NOW - timedelta(hours=1)) is not None
    assert verify_identity_token(token, SECRET) is None  # the real clock is far later


def test_empty_or_short_secret_rejects_everything() -> None:
    short = "too-short"
    token = craft({"sub": "acct-42", "exp": EXP}, key=short)
    assert verify_identity_token(token, short, now=NOW) is None
    assert verify_identity_token(craft({"sub": "acct-42", "exp": EXP}), "", now=NOW) is None


def test_check_webchat_secret() -> None:
    check_webchat_secret(SECRET)
    with pytest.raises(IdentityConfigError):
        check_webchat_secret("short")


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_any_single_character_change_is_rejected_or_harmless(data: st.DataObject) -> None:
    token = craft({"sub": "acct-42", "exp": EXP, "phone_number": "+5511987654321"})
    original = verify(token)
    position = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.sampled_from("ABCxyz019-_."))
    mutated = token[:position] + replacement + token[position + 1 :]
    result = verify(mutated)
    # Base64 padding bits can make a change invisible; anything visible must be refused.
    assert result is None or result == original
