"""Identity tokens through `verify_identity_token`: claims or None (its whole contract: a bad
token is None, never an exception), or a crash. Half the inputs are correctly signed, so the
claim checks behind the signature get fuzzed too.

    .venv/bin/python fuzz/identity_token.py -runs=100000
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime

import atheris
from seeds import IDENTITY_CLAIMS
from structured import document, json_value, keys_of, run  # first: puts the repository on sys.path

with atheris.instrument_imports(include=["identity"]):
    import identity.webtoken as webtoken
    from identity import WebClaims, verify_identity_token


SECRET = "relaydesk-webchat-fuzz-secret-0123456789"
NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEYS = keys_of(webtoken) + ["sub", "exp", "nbf", "iat", "phone_number", "email", "name",
                            "phone_number_verified", "email_verified", "HS256", "JWT"]  # fmt: skip


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signed(fdp: atheris.FuzzedDataProvider) -> str:
    header = {"alg": "HS256", "typ": "JWT"} if fdp.ConsumeBool() else json_value(fdp, KEYS)
    payload = document(fdp, IDENTITY_CLAIMS, KEYS)
    if isinstance(payload, dict) and fdp.ConsumeBool():
        payload.setdefault("sub", "acct-1")
        payload.setdefault("exp", NOW.timestamp() + fdp.ConsumeIntInRange(-(10**6), 10**6))
    head = b64(json.dumps(header).encode())
    body = b64(json.dumps(payload).encode())
    mac = hmac.new(SECRET.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def test(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    token = signed(fdp) if fdp.ConsumeBool() else fdp.ConsumeUnicode(fdp.remaining_bytes())
    claims = verify_identity_token(token, SECRET, now=NOW)
    assert claims is None or isinstance(claims, WebClaims)


if __name__ == "__main__":
    run(test)
