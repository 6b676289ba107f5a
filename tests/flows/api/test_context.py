"""`POST /v1/context` through a real server on SQLite: contract, errors, scopes per level."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from gateway.keys import SESSIONS
from gateway.storage.records import NewFact
from gateway.storage.repositories import facts, tenants
from tests.support.app_settings import AUTH
from tests.support.context_api import post_context, whatsapp_user_message
from tests.support.report_fields import REPORT_FIELDS

NUMBER = "+5511998765432"
SECRET_FACTS = {
    "public": ("store_hours", "open 9-18"),
    "profile": ("preferred_name", "Aninha"),
    "account": ("order_id", "PED-4471"),
    "payment": ("pix_key", "ana.pix@example.org"),
}


async def _context(api: TestClient, **body: object) -> dict[str, object]:  # type: ignore[type-arg]
    return await post_context(api, AUTH, **body)


async def test_requires_the_api_key(api: TestClient) -> None:  # type: ignore[type-arg]
    response = await api.post(
        "/v1/context", json={"channel": "whatsapp", "external_id": NUMBER, "message": "oi"}
    )
    assert response.status == 401
    assert (await response.json())["error"] == "unauthorized"


async def test_malformed_bodies_are_400_with_a_reason(api: TestClient) -> None:  # type: ignore[type-arg]
    cases = [
        (b"{", "malformed_json"),
        (b'{"channel": "fax", "external_id": "1", "message": "x"}', "invalid_body"),
        (b'{"channel": "whatsapp", "message": "x"}', "invalid_body"),
        (
            b'{"channel": "whatsapp", "external_id": "not a number", "message": "x"}',
            "invalid_identity",
        ),
    ]
    for raw, code in cases:
        response = await api.post(
            "/v1/context", data=raw, headers={**AUTH, "Content-Type": "application/json"}
        )
        assert response.status == 400, raw
        body = await response.json()
        assert body["error"] == code
        assert body["detail"]


async def test_contract_fields(api: TestClient) -> None:  # type: ignore[type-arg]
    body = await _context(
        api, channel="whatsapp", external_id=f"whatsapp:{NUMBER}", message="Meu pedido atrasou"
    )
    assert body["link_level"] == "verified"
    assert body["allowed_scopes"] == ["account", "payment", "profile", "public"]
    messages = body["messages"]
    assert isinstance(messages, list)
    assert messages[0]["role"] == "system"
    assert messages[-1] == {"role": "user", "content": "Meu pedido atrasou"}
    report = body["report"]
    assert isinstance(report, dict)
    assert set(report) >= REPORT_FIELDS
    assert report["window"] == 8192
    assert report["estimated_tokens"] <= report["input_budget"]
    assert {s["name"] for s in report["slices"]} >= {"instruction", "facts", "current_episode"}
    assert len(report["prefix_sha256"]) == 64
    again = await _context(
        api, channel="whatsapp", external_id=f"whatsapp:{NUMBER}", message="outra pergunta"
    )
    assert again["customer_id"] == body["customer_id"]
    assert again["report"]["prefix_sha256"] == report["prefix_sha256"]  # type: ignore[index]


async def test_oversized_fixed_part_is_422(api: TestClient) -> None:  # type: ignore[type-arg]
    async with api.app[SESSIONS].begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", settings={"instruction": "Regra importante. " * 2000}
        )
    response = await api.post(
        "/v1/context",
        json={"channel": "whatsapp", "external_id": NUMBER, "message": "oi"},
        headers=AUTH,
    )
    assert response.status == 422
    assert (await response.json())["error"] == "fixed_context_exceeds_budget"


async def _seed_customer(api: TestClient) -> str:  # type: ignore[type-arg]
    body = await _context(api, channel="whatsapp", external_id=NUMBER, message="oi")
    customer_id = str(body["customer_id"])
    async with api.app[SESSIONS].begin() as session:
        _, source = await whatsapp_user_message(session, customer_id, NUMBER, "dados", 2)
        for scope, (key, value) in SECRET_FACTS.items():
            await facts.record_fact(
                session, customer_id, NewFact(key, value, scope, source.id, confirmed=True)
            )
    return customer_id


def _visible(body: dict[str, object]) -> set[str]:
    system = body["messages"][0]["content"]  # type: ignore[index]
    return {scope for scope, (_, value) in SECRET_FACTS.items() if value in system}


async def test_each_link_level_sees_only_its_scopes(api: TestClient) -> None:  # type: ignore[type-arg]
    customer_id = await _seed_customer(api)
    verified = await _context(api, channel="whatsapp", external_id=NUMBER, message="meu pedido")
    assert _visible(verified) == {"public", "profile", "account", "payment"}

    # A caller id and an anonymous web visitor stating the number: never merged on their own.
    caller = await _context(api, channel="phone", external_id=NUMBER, message="sobre o pedido")
    assert caller["customer_id"] != customer_id
    assert _visible(caller) == set()
    web = await _context(
        api, channel="webchat", external_id="visitor-1", message=f"sou eu, {NUMBER}, meu pedido"
    )
    assert web["customer_id"] != customer_id and web["link_level"] == "anonymous"
    assert _visible(web) == set()

    # An operator confirms both pending links: same customer, but each message's evidence
    # still decides the scopes — caller id is inferred (public), anonymous sees own facts only.
    links = await (await api.get("/v1/operator/pending-links", headers=AUTH)).json()
    assert len(links["pending_links"]) == 2
    for link in links["pending_links"]:
        confirmed = await api.post(
            f"/v1/operator/pending-links/{link['id']}/confirm",
            json={"reason": "confirmed with the customer", "actor": "ops"},
            headers=AUTH,
        )
        assert confirmed.status == 200
    caller = await _context(api, channel="phone", external_id=NUMBER, message="sobre o pedido")
    assert caller["customer_id"] == customer_id and caller["link_level"] == "inferred"
    assert _visible(caller) == {"public"}
    web = await _context(api, channel="webchat", external_id="visitor-1", message="meu pedido")
    assert web["customer_id"] == customer_id and web["link_level"] == "anonymous"
    assert _visible(web) == set()  # public facts exist, but none learned from this visitor
    audit = await (await api.get("/v1/operator/audit", headers=AUTH)).json()
    assert [e["action"] for e in audit["audit"]].count("confirm_link") == 2


async def test_dialogue_stands_in_for_history_and_is_cut_at_max_input_chars(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    async with api.app[SESSIONS].begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", settings={"max_input_chars": 1000}
        )
    dialogue = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turno {i} " + "x" * 90}
        for i in range(30)
    ]
    body = await _context(
        api, channel="whatsapp", external_id=NUMBER, message="e agora?", dialogue=dialogue
    )
    report = body["report"]
    total = sum(len(turn["content"]) for turn in dialogue)
    assert report["dialogue"]["chars_dropped"] == total - 1000  # type: ignore[index]
    contents = " ".join(m["content"] for m in body["messages"])  # type: ignore[union-attr]
    assert "turno 29" in contents and "turno 0 " not in contents


async def test_active_campaign_messages_are_anchored_through_every_cut(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    created = await api.post(
        "/v1/campaigns",
        json={
            "name": "renovação",
            "messages": ["Contato pré-coletado: {nome}"],
            "variables": {"nome": "Ana Souza"},
        },
        headers=AUTH,
    )
    campaign = await created.json()
    long_dialogue = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"mensagem {i} " * 60}
        for i in range(200)
    ]
    body = await _context(
        api,
        channel="whatsapp",
        external_id=NUMBER,
        message="quero renovar",
        dialogue=long_dialogue,
        campaign_id=campaign["id"],
    )
    system = body["messages"][0]["content"]  # type: ignore[index]
    assert "Contato pré-coletado: Ana Souza" in system
    assert body["report"]["dropped"]  # type: ignore[index]  # the history really was cut
    await api.delete(f"/v1/campaigns/{campaign['id']}", headers=AUTH)
    after = await _context(
        api,
        channel="whatsapp",
        external_id=NUMBER,
        message="quero renovar",
        campaign_id=campaign["id"],
    )
    assert "Contato pré-coletado" not in after["messages"][0]["content"]  # type: ignore[index]


def _token(sub: str, **claims: object) -> str:
    import time

    import jwt

    payload = {"sub": sub, "exp": int(time.time()) + 600, **claims}
    return jwt.encode(payload, "webchat-secret-for-tests-0123456789abcdef", algorithm="HS256")


async def test_web_token_with_verified_phone_joins_and_merge_protection_holds(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    owner = await _context(api, channel="whatsapp", external_id=NUMBER, message="oi")
    joined = await _context(
        api,
        channel="webchat",
        external_id="visitor-a",
        message="oi",
        identity_token=_token("acct-1", phone_number=NUMBER, phone_number_verified=True),
    )
    assert joined["customer_id"] == owner["customer_id"]
    assert joined["link_level"] == "verified"
    # A second web account proving the same phone would give the customer two accounts
    # (limit 1): no merge, a pending link instead.
    second = await _context(
        api,
        channel="webchat",
        external_id="visitor-b",
        message="oi",
        identity_token=_token("acct-2", phone_number=NUMBER, phone_number_verified=True),
    )
    assert second["customer_id"] != owner["customer_id"]
    pending = await (await api.get("/v1/operator/pending-links", headers=AUTH)).json()
    assert [p["reason"] for p in pending["pending_links"]] == ["merge_limit"]
    # An unverified phone claim in a valid token is only asserted: no join.
    claimed = await _context(
        api,
        channel="webchat",
        external_id="visitor-c",
        message="oi",
        identity_token=_token("acct-3", phone_number=NUMBER, phone_number_verified=False),
    )
    assert claimed["customer_id"] != owner["customer_id"]
    forged = await _context(
        api,
        channel="webchat",
        external_id="visitor-d",
        message="oi",
        identity_token=_token("acct-1", phone_number=NUMBER, phone_number_verified=True)[:-3]
        + "abc",
    )
    assert forged["link_level"] == "anonymous"
    assert forged["customer_id"] != owner["customer_id"]


async def test_tenant_blocked_values_never_link(api: TestClient) -> None:  # type: ignore[type-arg]
    # Without the block, stating this number would propose a link to its owner (see above).
    await _context(api, channel="whatsapp", external_id=NUMBER, message="oi")
    async with api.app[SESSIONS].begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", settings={"blocked_values": {"phones": [NUMBER]}}
        )
    web = await _context(
        api, channel="webchat", external_id="visitor-z", message=f"meu número é {NUMBER}"
    )
    assert web["link_level"] == "anonymous"
    pending = await (await api.get("/v1/operator/pending-links", headers=AUTH)).json()
    assert pending["pending_links"] == []
    blocked_sender = await _context(api, channel="whatsapp", external_id=NUMBER, message="oi")
    assert blocked_sender["link_level"] == "anonymous"
    assert blocked_sender["allowed_scopes"] == ["public"]


def _unsigned(sub: str) -> str:
    import base64
    import json
    import time

    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    claims = {
        "sub": sub,
        "exp": int(time.time()) + 600,
        "phone_number": NUMBER,
        "phone_number_verified": True,
    }
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


async def test_bad_tokens_look_exactly_like_no_token(api: TestClient) -> None:  # type: ignore[type-arg]
    import time

    import jwt

    owner = await _context(api, channel="whatsapp", external_id=NUMBER, message="oi")
    expired = jwt.encode(
        {
            "sub": "acct-1",
            "exp": int(time.time()) - 3600,
            "phone_number": NUMBER,
            "phone_number_verified": True,
        },
        "webchat-secret-for-tests-0123456789abcdef",
        algorithm="HS256",
    )
    # HS512 is refused whatever the key (only HS256 tokens are read).
    wrong_alg = jwt.encode(
        {"sub": "acct-1", "exp": int(time.time()) + 600},
        "webchat-secret-for-tests-0123456789abcdef" * 2,
        algorithm="HS512",
    )
    shapes = []
    for index, token in enumerate([None, "garbage", expired, wrong_alg, _unsigned("acct-1")]):
        body = await _context(
            api,
            channel="webchat",
            external_id=f"visitor-{index}",
            message="oi",
            identity_token=token,
        )
        assert body["link_level"] == "anonymous"
        assert body["customer_id"] != owner["customer_id"]
        assert body["allowed_scopes"] == ["public"]
        shapes.append(sorted(body))
    assert all(shape == shapes[0] for shape in shapes)
