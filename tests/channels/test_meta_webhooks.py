"""Meta's shared webhook checks: the subscription challenge and `X-Hub-Signature-256`, as the
WhatsApp Cloud API adapter uses them (and an Instagram or Messenger adapter would)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.base import RawRequest, SignatureInvalid
from channels.meta_webhooks import (
    SIGNATURE_HEADER,
    SubscriptionCheck,
    body_signature,
    subscription_challenge,
    verify_signature,
)
from channels.whatsapp_cloud import WhatsAppCloudChannel

SECRET = "meta-app-secret"
TOKEN = "meta-verify-token"
BODY = b'{"object":"whatsapp_business_account","entry":[]}'


def test_the_signature_is_the_hex_hmac_sha256_of_the_raw_body() -> None:
    digest = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    assert body_signature(SECRET, BODY) == f"sha256={digest}"
    verify_signature(f"sha256={digest}", BODY, SECRET)
    verify_signature(f"  sha256={digest}\n", BODY, SECRET)  # header whitespace is not content


@pytest.mark.parametrize(
    ("signature", "body", "secret", "reason"),
    [
        (None, BODY, SECRET, "missing"),
        ("", BODY, SECRET, "missing"),
        (body_signature(SECRET, BODY), BODY + b" ", SECRET, "does not match"),
        (body_signature("another secret", BODY), BODY, SECRET, "does not match"),
        (body_signature(SECRET, BODY).removeprefix("sha256="), BODY, SECRET, "does not match"),
        (body_signature(SECRET, BODY).upper(), BODY, SECRET, "does not match"),
        (body_signature(SECRET, BODY), BODY, None, "not configured"),
        (body_signature(SECRET, BODY), BODY, "", "not configured"),
    ],
)
def test_a_missing_or_wrong_signature_is_refused(
    signature: str | None, body: bytes, secret: str | None, reason: str
) -> None:
    with pytest.raises(SignatureInvalid, match=reason) as refused:
        verify_signature(signature, body, secret)
    assert refused.value.status == 403


@given(st.binary(max_size=512), st.binary(min_size=1, max_size=8))
def test_any_change_to_the_body_breaks_the_signature(body: bytes, extra: bytes) -> None:
    signature = body_signature(SECRET, body)
    verify_signature(signature, body, SECRET)
    with pytest.raises(SignatureInvalid):
        verify_signature(signature, body + extra, SECRET)


def test_the_challenge_comes_back_for_our_verify_token_only() -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": TOKEN, "hub.challenge": "1158201444"}
    assert subscription_challenge(query, TOKEN) == "1158201444"
    assert subscription_challenge({**query, "hub.challenge": ""}, TOKEN) == ""
    for wrong, reason in [
        ({**query, "hub.verify_token": "guess"}, "does not match"),
        ({k: v for k, v in query.items() if k != "hub.verify_token"}, "does not match"),
        ({**query, "hub.mode": "unsubscribe"}, "subscribe"),
        ({k: v for k, v in query.items() if k != "hub.mode"}, "subscribe"),
    ]:
        with pytest.raises(SignatureInvalid, match=reason):
            subscription_challenge(wrong, TOKEN)
    for unset in (None, ""):
        with pytest.raises(SignatureInvalid, match="not configured"):
            subscription_challenge(query, unset)


async def test_the_cloud_api_adapter_checks_through_this_module() -> None:
    async with httpx.AsyncClient() as http:
        cloud = WhatsAppCloudChannel(
            api_base="https://graph.example.test/v21.0",
            verify_token=TOKEN,
            app_secret=SECRET,
            access_token=None,
            phone_number_id=None,
            http=http,
            clock=lambda: datetime(2026, 12, 2, tzinfo=UTC),
        )
        assert isinstance(cloud, SubscriptionCheck)
        query = {"hub.mode": "subscribe", "hub.verify_token": TOKEN, "hub.challenge": "42"}
        assert cloud.subscription_challenge(query) == "42"
        url = "https://relay.example.org/webhooks/whatsapp/cloud"
        cloud.verify(
            RawRequest("POST", url, {SIGNATURE_HEADER: body_signature(SECRET, BODY)}, BODY)
        )
        forged = body_signature("not the app secret", BODY)
        with pytest.raises(SignatureInvalid, match="does not match"):
            cloud.verify(RawRequest("POST", url, {SIGNATURE_HEADER: forged}, BODY))
