"""The identity assertion every action call carries (`X-Relaydesk-Identity`): a short-lived JWT
in which the gateway, never the model, names the customer the call acts for.

Signed EdDSA (Ed25519) when the deployment has a private key
(`RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY`, PEM), its public key published as a JSON Web Key Set at
`/.well-known/jwks.json`; else HS256 with the shared `RELAYDESK_TOOL_IDENTITY_KEY`. Claims:
``iss`` "relaydesk", ``aud`` the action's name (a token meant for one API is refused by
another), ``sub`` the customer, ``link_level``, ``channel``, ``conversation``, ``identifiers``
(only those the action may learn, `identity.tool_reach`), ``jti``, ``iat`` and ``exp`` at most
60 s later.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from jwt.algorithms import OKPAlgorithm

from identity.levels import LinkLevel

if TYPE_CHECKING:
    from gateway.config import Settings

__all__ = [
    "HEADER",
    "ISSUER",
    "AssertionSigner",
    "AssertionUnavailable",
    "IdentityClaims",
    "signer_for",
]

HEADER: Final = "X-Relaydesk-Identity"
ISSUER: Final = "relaydesk"
MAX_LIFETIME_S: Final = 60
# A shared key shorter than this is refused: HS256 wants at least the hash's 32 bytes.
MIN_SHARED_KEY_BYTES: Final = 32


class AssertionUnavailable(RuntimeError):
    """No key to sign with: the deployment set neither identity key, so no action is called."""


@dataclass(frozen=True, slots=True)
class IdentityClaims:
    """Whom a call acts for, as the gateway resolved it."""

    customer_id: str
    link_level: LinkLevel
    channel: str
    conversation: str
    identifiers: Mapping[str, str] = field(default_factory=dict)


class AssertionSigner:
    """Signs assertions with the deployment's key; `jwks` is what `/.well-known/jwks.json`
    serves (empty without a private key)."""

    def __init__(
        self,
        *,
        shared_key: str | None = None,
        private_key_pem: str | None = None,
        lifetime_s: int = MAX_LIFETIME_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 1 <= lifetime_s <= MAX_LIFETIME_S:
            raise ValueError(f"an assertion lives 1 to {MAX_LIFETIME_S} s")
        if shared_key is not None and len(shared_key.encode()) < MIN_SHARED_KEY_BYTES:
            raise ValueError(
                f"RELAYDESK_TOOL_IDENTITY_KEY must be at least {MIN_SHARED_KEY_BYTES} bytes"
            )
        self._shared_key = shared_key
        self._private_key = _ed25519(private_key_pem) if private_key_pem else None
        self._lifetime_s = lifetime_s
        self._clock = clock
        self.jwks: dict[str, list[dict[str, str]]] = {"keys": []}
        self._kid: str | None = None
        if self._private_key is not None:
            public = json.loads(OKPAlgorithm.to_jwk(self._private_key.public_key()))
            self._kid = _thumbprint(public)
            self.jwks = {"keys": [{**public, "kid": self._kid, "use": "sig", "alg": "EdDSA"}]}

    @property
    def available(self) -> bool:
        return self._private_key is not None or self._shared_key is not None

    @property
    def algorithm(self) -> str | None:
        if self._private_key is not None:
            return "EdDSA"
        return "HS256" if self._shared_key is not None else None

    def sign(self, audience: str, claims: IdentityClaims) -> str:
        """A fresh assertion for one call to the action ``audience``."""
        now = int(self._clock())
        payload: dict[str, Any] = {
            "iss": ISSUER,
            "aud": audience,
            "sub": claims.customer_id,
            "link_level": claims.link_level.value,
            "channel": claims.channel,
            "conversation": claims.conversation,
            "identifiers": dict(claims.identifiers),
            "jti": uuid.uuid4().hex,
            "iat": now,
            "exp": now + self._lifetime_s,
        }
        if self._private_key is not None:
            return jwt.encode(
                payload, self._private_key, algorithm="EdDSA", headers={"kid": self._kid or ""}
            )
        if self._shared_key is not None:
            return jwt.encode(payload, self._shared_key, algorithm="HS256")
        raise AssertionUnavailable(
            "set RELAYDESK_TOOL_IDENTITY_KEY or RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY to call actions"
        )


def signer_for(settings: Settings) -> AssertionSigner:
    """The deployment's signer, from `RELAYDESK_TOOL_IDENTITY_KEY` and
    `RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY` (a key that cannot be used stops the start)."""
    shared, private = settings.tool_identity_key, settings.tool_identity_private_key
    return AssertionSigner(
        shared_key=shared.get_secret_value() if shared is not None else None,
        private_key_pem=private.get_secret_value() if private is not None else None,
    )


def _ed25519(pem: str) -> Ed25519PrivateKey:
    key = load_pem_private_key(pem.encode(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("RELAYDESK_TOOL_IDENTITY_PRIVATE_KEY must be an Ed25519 key (PEM)")
    return key


def _thumbprint(jwk: Mapping[str, str]) -> str:
    """RFC 7638: the SHA-256 of the key's required members, sorted, without spaces."""
    members = {name: jwk[name] for name in ("crv", "kty", "x")}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode())
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
