"""`GET /v1/operator/customers?q=…`: what an operator types is matched literally, so `%` and
`_` find the customers whose identities hold them, not every customer."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.support.app_settings import AUTH
from tests.support.context_api import post_context


async def _visitor(api: TestClient, visitor_id: str) -> str:  # type: ignore[type-arg]
    """A customer whose only identity is the web visitor `web:anon:<visitor_id>`."""
    body = await post_context(api, AUTH, channel="webchat", external_id=visitor_id, message="oi")
    return str(body["customer_id"])


async def _found(api: TestClient, query: str) -> set[str]:  # type: ignore[type-arg]
    response = await api.get("/v1/operator/customers", params={"q": query}, headers=AUTH)
    assert response.status == 200, await response.text()
    return {customer["id"] for customer in (await response.json())["customers"]}


async def test_percent_and_underscore_match_only_themselves(api: TestClient) -> None:  # type: ignore[type-arg]
    underscore = await _visitor(api, "promo_ana")
    lookalike = await _visitor(api, "promoxana")
    percent = await _visitor(api, "desconto-50%-bia")
    backslash = await _visitor(api, "caixa\\carla")
    assert await _found(api, "_") == {underscore}
    assert await _found(api, "promo_ana") == {underscore}
    assert await _found(api, "%") == {percent}
    assert await _found(api, "50%") == {percent}
    assert await _found(api, "\\") == {backslash}
    assert await _found(api, "%_%") == set()
    # An ordinary substring still finds every customer it is part of.
    assert await _found(api, "PROMO") == {underscore, lookalike}
