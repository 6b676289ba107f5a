from __future__ import annotations

from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)

from gateway.tools.assertion import (
    AssertionSigner,
    AssertionUnavailable,
    IdentityClaims,
)
from identity.levels import LinkLevel

SHARED_KEY = "k" * 40
CLAIMS = IdentityClaims(
    customer_id="cus_ana",
    link_level=LinkLevel.VERIFIED,
    channel="whatsapp",
    conversation="whatsapp:+5511999990000",
    identifiers={"phone": "+5511999990000"},
)


def _pem() -> str:
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()


def test_a_shared_key_assertion_names_the_customer_for_one_action() -> None:
    signer = AssertionSigner(shared_key=SHARED_KEY, clock=lambda: 1_700_000_000.0)

    token = signer.sign("order_status", CLAIMS)
    claims = jwt.decode(
        token,
        SHARED_KEY,
        algorithms=["HS256"],
        audience="order_status",
        issuer="relaydesk",
        options={"verify_exp": False},
    )

    assert claims["sub"] == "cus_ana"
    assert claims["link_level"] == "verified"
    assert claims["channel"] == "whatsapp"
    assert claims["conversation"] == "whatsapp:+5511999990000"
    assert claims["identifiers"] == {"phone": "+5511999990000"}
    assert claims["exp"] - claims["iat"] == 60
    assert len(claims["jti"]) == 32


def test_each_assertion_has_its_own_id_and_another_action_refuses_it() -> None:
    signer = AssertionSigner(shared_key=SHARED_KEY)
    first, second = signer.sign("order_status", CLAIMS), signer.sign("order_status", CLAIMS)

    ids = {
        jwt.decode(token, SHARED_KEY, algorithms=["HS256"], audience="order_status")["jti"]
        for token in (first, second)
    }
    assert len(ids) == 2
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(first, SHARED_KEY, algorithms=["HS256"], audience="change_pix_key")


def test_an_assertion_expires_within_a_minute() -> None:
    signer = AssertionSigner(shared_key=SHARED_KEY, clock=lambda: 1_000_000.0)
    token = signer.sign("order_status", CLAIMS)

    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(token, SHARED_KEY, algorithms=["HS256"], audience="order_status")


def test_with_a_private_key_the_assertion_is_eddsa_and_the_key_set_verifies_it() -> None:
    signer = AssertionSigner(shared_key=SHARED_KEY, private_key_pem=_pem())

    token = signer.sign("order_status", CLAIMS)
    [published] = signer.jwks["keys"]
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(
        token, jwt.PyJWK(published).key, algorithms=["EdDSA"], audience="order_status"
    )

    assert signer.algorithm == "EdDSA"
    assert header["alg"] == "EdDSA" and header["kid"] == published["kid"]
    assert published["kty"] == "OKP" and published["crv"] == "Ed25519"
    assert "d" not in published  # the private part is never published
    assert claims["sub"] == "cus_ana"
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(
            token,
            jwt.PyJWK(AssertionSigner(private_key_pem=_pem()).jwks["keys"][0]).key,
            algorithms=["EdDSA"],
            audience="order_status",
        )


def test_without_a_key_no_assertion_is_made() -> None:
    signer = AssertionSigner()

    assert not signer.available and signer.jwks == {"keys": []}
    with pytest.raises(AssertionUnavailable):
        signer.sign("order_status", CLAIMS)


def test_a_short_shared_key_or_a_long_lifetime_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        AssertionSigner(shared_key="short")
    with pytest.raises(ValueError, match="1 to 60 s"):
        AssertionSigner(shared_key=SHARED_KEY, lifetime_s=3600)


def test_the_docs_check_in_a_business_api_accepts_an_assertion_and_names_the_customer() -> None:
    guide = (Path(__file__).parents[3] / "docs" / "actions.md").read_text()
    after = guide.index("A\nbusiness API checks it in a few lines:")
    start = guide.index("```python\n", after) + len("```python\n")
    snippet = guide[start : guide.index("```", start)]
    namespace: dict[str, Any] = {}
    exec(compile(snippet, "docs/actions.md", "exec"), namespace)
    token = AssertionSigner(shared_key=SHARED_KEY).sign("order_status", CLAIMS)

    customer = namespace["customer_of"]({"X-Relaydesk-Identity": token}, "order_status", SHARED_KEY)

    assert customer == "cus_ana"
    with pytest.raises(jwt.InvalidAudienceError):
        namespace["customer_of"]({"X-Relaydesk-Identity": token}, "change_pix_key", SHARED_KEY)
