"""Verified e-mails from web chat identity tokens, through `POST /v1/context`: an address
links only to the same mailbox. `ana@straße.de` is not `ana@strasse.de` (no join, no pending
link, none of her facts in the window); ASCII case still does not matter; a spelling the
normalization had to fold (`ſ` for `s`) is at most a proposal for an operator."""

from __future__ import annotations

import time

import jwt
import pytest
from aiohttp.test_utils import TestClient

from gateway.keys import SESSIONS
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import customers, episodes, facts, messages, tenants
from tests.support.app_settings import AUTH
from tests.support.context_api import post_context

WEBCHAT_SECRET = "webchat-secret-for-tests-0123456789abcdef"
ANA = "ana@strasse.de"
ORDER = "PED-90417"
PIX = "5f0c1e9a-3b7d-4c2e-9a61-0d8e4b2f7c35"


def _token(sub: str, email: str) -> str:
    claims = {"sub": sub, "exp": int(time.time()) + 600, "email": email, "email_verified": True}
    return jwt.encode(claims, WEBCHAT_SECRET, algorithm="HS256")


async def _web(api: TestClient, sub: str, email: str) -> dict[str, object]:  # type: ignore[type-arg]
    return await post_context(
        api,
        AUTH,
        channel="webchat",
        external_id=f"visitor-{sub}",
        message="qual o status do meu pedido?",
        identity_token=_token(sub, email),
    )


async def _ana(api: TestClient, accounts: int = 5) -> str:  # type: ignore[type-arg]
    """Ana's customer: a verified web account with her address, her order and Pix key.

    With room for several ``accounts`` per customer a verified e-mail match is a join, the
    strongest thing a match does; with one (the default limit) it is a merge-limit proposal."""
    async with api.app[SESSIONS].begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", settings={"link_limits": {"web_account": accounts}}
        )
    body = await _web(api, "acct-ana", ANA)
    customer_id = str(body["customer_id"])
    async with api.app[SESSIONS].begin() as session:
        identity = await customers.find_identity(session, "webchat", "web:acct:acct-ana")
        assert identity is not None and identity.customer_id == customer_id
        episode = await episodes.open_episode(
            session, customer_id=customer_id, channel="webchat", identity_id=identity.id
        )
        source = await messages.append_message(
            session,
            NewMessage(customer_id, episode.id, "webchat", "user", "dados", 2, identity.id),
        )
        for key, value, scope in (("order_id", ORDER, "account"), ("pix_key", PIX, "payment")):
            await facts.record_fact(
                session, customer_id, NewFact(key, value, scope, source.id, confirmed=True)
            )
    return customer_id


def _window(body: dict[str, object]) -> str:
    return str(body["messages"][0]["content"])  # type: ignore[index]


async def _pending(api: TestClient) -> list[dict[str, object]]:  # type: ignore[type-arg]
    listed = await (await api.get("/v1/operator/pending-links", headers=AUTH)).json()
    links: list[dict[str, object]] = listed["pending_links"]
    return links


@pytest.mark.parametrize("accounts", [1, 5])
async def test_a_verified_sharp_s_address_reaches_nothing_of_the_ss_customer(
    api: TestClient,  # type: ignore[type-arg]
    accounts: int,
) -> None:
    ana = await _ana(api, accounts)
    claimant = await _web(api, "acct-claimant", "ana@straße.de")
    assert claimant["customer_id"] != ana
    assert claimant["link_level"] == "verified"  # the claimant's own account, nothing more
    assert ORDER not in _window(claimant) and PIX not in _window(claimant)
    assert [link for link in await _pending(api) if link["target_customer_id"] == ana] == []
    again = await _web(api, "acct-claimant", "ana@straße.de")
    assert again["customer_id"] == claimant["customer_id"]
    assert ORDER not in _window(again) and PIX not in _window(again)


async def test_ascii_case_still_reaches_the_same_mailbox(api: TestClient) -> None:  # type: ignore[type-arg]
    ana = await _ana(api)
    joined = await _web(api, "acct-ana-phone", "Ana@Strasse.DE")
    assert joined["customer_id"] == ana and joined["link_level"] == "verified"
    assert ORDER in _window(joined) and PIX in _window(joined)


async def test_a_folded_spelling_is_only_a_proposal(api: TestClient) -> None:  # type: ignore[type-arg]
    ana = await _ana(api)
    # U+017F LONG S: the domain maps to "strasse.de", Ana's mailbox, but only by folding.
    folded = await _web(api, "acct-long-s", "ana@\u017ftrasse.de")
    assert folded["customer_id"] != ana
    assert ORDER not in _window(folded) and PIX not in _window(folded)
    [link] = await _pending(api)
    assert link["target_customer_id"] == ana
    assert link["identifier"] == {"kind": "email", "value": ANA}
    assert (link["reason"], link["claimed_level"]) == ("asserted_match", "asserted")
