"""What every Meta webhook shares (WhatsApp Cloud API, Instagram, Messenger): the subscription
check of the callback URL and the signature of each delivery.

Meta checks a callback URL with a GET carrying `hub.mode=subscribe`, the verify token given
in the app's dashboard and a `hub.challenge` to echo back as the body. Each POST is signed in
`X-Hub-Signature-256: sha256=<hex>`, the HMAC-SHA256 of the raw body with the app secret;
both secrets are compared in constant time. A missing or wrong one is `SignatureInvalid`
(403): the gateway stores nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from channels.base import SignatureInvalid

__all__ = [
    "SIGNATURE_HEADER",
    "SubscriptionCheck",
    "body_signature",
    "subscription_challenge",
    "verify_signature",
]

SIGNATURE_HEADER = "X-Hub-Signature-256"


def subscription_challenge(query: Mapping[str, str], verify_token: str | None) -> str:
    """The `hub.challenge` to answer Meta's subscription check with; `SignatureInvalid` unless
    `hub.mode` is subscribe and `hub.verify_token` is `verify_token`."""
    if not verify_token:
        raise SignatureInvalid(
            "the webhook verify token is not configured", reason="channel_not_configured"
        )
    if query.get("hub.mode") != "subscribe":
        raise SignatureInvalid("hub.mode must be subscribe", reason="bad_verify_token")
    given = query.get("hub.verify_token", "")
    if not hmac.compare_digest(given.encode(), verify_token.encode()):
        raise SignatureInvalid("hub.verify_token does not match", reason="bad_verify_token")
    return query.get("hub.challenge", "")


def body_signature(app_secret: str, body: bytes) -> str:
    """The `X-Hub-Signature-256` value Meta sends with `body`."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(signature: str | None, body: bytes, app_secret: str | None) -> None:
    """`SignatureInvalid` unless `signature` (the header's value) signs `body` with
    `app_secret`."""
    if not app_secret:
        raise SignatureInvalid("the app secret is not configured", reason="channel_not_configured")
    if not signature:
        raise SignatureInvalid(f"missing {SIGNATURE_HEADER}")
    expected = body_signature(app_secret, body)
    if not hmac.compare_digest(signature.strip().encode(), expected.encode()):
        raise SignatureInvalid(f"{SIGNATURE_HEADER} does not match")


@runtime_checkable
class SubscriptionCheck(Protocol):
    """An adapter of a Meta webhook: it answers the GET check of its callback URL."""

    def subscription_challenge(self, query: Mapping[str, str]) -> str:
        """`hub.challenge` for a good `hub.verify_token`; raise `SignatureInvalid`."""
        ...
