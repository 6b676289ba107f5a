from __future__ import annotations

from datetime import date, timedelta

from aiohttp.test_utils import TestClient

from tests.support.app_settings import AUTH


async def test_campaign_api_requires_the_key(api: TestClient) -> None:  # type: ignore[type-arg]
    assert (await api.get("/v1/campaigns")).status == 401
    wrong = await api.get("/v1/campaigns", headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert (await wrong.json())["error"] == "unauthorized"


async def test_create_list_get_delete(api: TestClient) -> None:  # type: ignore[type-arg]
    tomorrow = (date.today() + timedelta(days=1)).isoformat()
    created = await api.post(
        "/v1/campaigns",
        json={
            "name": "renovação",
            "messages": ["Contato pré-coletado: {nome}, plano {plano}"],
            "variables": {"nome": "Ana", "plano": "Premium"},
            "expire_at": tomorrow,
        },
        headers=AUTH,
    )
    assert created.status == 201
    body = await created.json()
    assert body["messages"] == ["Contato pré-coletado: Ana, plano Premium"]
    assert body["active"] is True and body["expire_at"] == tomorrow
    listed = await (await api.get("/v1/campaigns", headers=AUTH)).json()
    assert [c["id"] for c in listed["campaigns"]] == [body["id"]]
    one = await api.get(f"/v1/campaigns/{body['id']}", headers=AUTH)
    assert (await one.json())["name"] == "renovação"
    assert (await api.delete(f"/v1/campaigns/{body['id']}", headers=AUTH)).status == 204
    assert (await (await api.get("/v1/campaigns", headers=AUTH)).json())["campaigns"] == []
    missing = await api.get("/v1/campaigns/nope", headers=AUTH)
    assert missing.status == 404 and (await missing.json())["error"] == "not_found"


async def test_malformed_campaign_is_400_with_reason(api: TestClient) -> None:  # type: ignore[type-arg]
    bad_json = await api.post("/v1/campaigns", data=b"{not json", headers=AUTH)
    assert bad_json.status == 400
    assert (await bad_json.json())["error"] == "malformed_json"
    no_messages = await api.post("/v1/campaigns", json={"name": "x", "messages": []}, headers=AUTH)
    assert no_messages.status == 400
    assert "messages" in (await no_messages.json())["detail"]


async def test_openapi_lists_the_routes(api: TestClient) -> None:  # type: ignore[type-arg]
    spec = await (await api.get("/openapi.json")).json()
    assert "/v1/campaigns" in spec["paths"]
    assert spec["components"]["schemas"]["CampaignIn"]["required"] == ["name", "messages"]


async def test_operator_routes_accept_the_console_login_in_openapi(api: TestClient) -> None:  # type: ignore[type-arg]
    spec = await (await api.get("/openapi.json")).json()
    merge = spec["paths"]["/v1/operator/customers/merge"]["post"]
    assert {"console": []} in merge["security"] and {"bearer": []} in merge["security"]
    assert spec["components"]["securitySchemes"]["console"]["in"] == "cookie"
    assert spec["paths"]["/v1/campaigns"]["post"]["security"] == [{"bearer": []}]


async def test_an_expiry_given_as_a_number_is_refused_not_read_as_1970(
    api: TestClient,  # type: ignore[type-arg]
) -> None:
    for number in (0, 1_700_000_000, -2.7584439007417932e-139):
        response = await api.post(
            "/v1/campaigns",
            json={"name": "promo", "messages": ["oi"], "expire_at": number},
            headers=AUTH,
        )
        assert response.status == 400, number
        assert "expire_at" in (await response.json())["detail"]
    listed = await (await api.get("/v1/campaigns", headers=AUTH)).json()
    assert listed["campaigns"] == []
