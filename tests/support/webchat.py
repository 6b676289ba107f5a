"""Web chat visitor ids as the widget gets them: issued and signed by the gateway."""

from __future__ import annotations

from aiohttp.test_utils import TestClient


async def signed_visitor(client: TestClient) -> str:  # type: ignore[type-arg]
    """A new visitor id from `POST /webchat/visitors`."""
    response = await client.post("/webchat/visitors")
    assert response.status == 201, await response.text()
    visitor: str = (await response.json())["visitor_id"]
    return visitor
