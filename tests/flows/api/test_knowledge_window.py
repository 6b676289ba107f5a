"""The knowledge base in `POST /v1/context` on a real gateway: each link level is told only
the documents its audience allows (never the operators' ones), and a document deleted through
one gateway instance leaves the windows of another sharing its database and Redis at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.api.knowledge import KNOWLEDGE_FORGETTING
from tests.support.app_settings import AUTH
from tests.support.stack import database_url, running_stack

NUMBER = "+5511998761234"
# Both instances serve one tenant: the host the requests name, not each test server's port.
SHOP = {**AUTH, "Host": "shop.example.com"}
QUESTION = "How does the refund work?"
# One document per audience, each about refunds, each with a sentence only it holds.
DOCUMENTS = {
    "public": ("Refund basics", "A refund is possible within thirty days. PUBLIC-LINE"),
    "customers": ("Refund for members", "Members get the refund as store credit. MEMBER-LINE"),
    "verified": ("Refund to your account", "The refund goes to your saved card. VERIFIED-LINE"),
    "operators": ("Refund override", "Operators may force a refund with code X9. OPERATOR-LINE"),
}


async def _add(client: TestClient, audience: str) -> str:  # type: ignore[type-arg]
    title, text = DOCUMENTS[audience]
    response = await client.post(
        "/v1/knowledge/documents",
        json={"content": text, "format": "text", "title": title, "audience": audience},
        headers=SHOP,
    )
    assert response.status == 201, await response.text()
    added: dict[str, Any] = await response.json()
    return str(added["id"])


async def _window(client: TestClient, **body: object) -> dict[str, Any]:  # type: ignore[type-arg]
    response = await client.post("/v1/context", json={"message": QUESTION, **body}, headers=SHOP)
    assert response.status == 200, await response.text()
    result: dict[str, Any] = await response.json()
    return result


def _told(body: dict[str, Any]) -> set[str]:
    system = body["messages"][0]["content"]
    return {audience for audience, (_, text) in DOCUMENTS.items() if text in system}


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_each_link_level_is_told_only_what_its_audience_allows(
    tmp_path: Path, backend: str
) -> None:
    async with running_stack(backend, tmp_path) as stack:
        for audience in DOCUMENTS:
            await _add(stack.client, audience)

        anonymous = await _window(stack.client, channel="webchat", external_id="visitor-7")
        assert anonymous["link_level"] == "anonymous"
        assert _told(anonymous) == {"public"}

        caller = await _window(stack.client, channel="phone", external_id="+5511900001111")
        assert caller["link_level"] == "inferred"
        assert _told(caller) == {"public"}

        verified = await _window(stack.client, channel="whatsapp", external_id=NUMBER)
        assert verified["link_level"] == "verified"
        assert _told(verified) == {"public", "customers", "verified"}
        # (A customer asserted is told the customers' documents too: tests/gateway/knowledge.)

        system = verified["messages"][0]["content"]
        assert "[k1] " in system and "[k3] " in system and "[k4] " not in system
        assert "OPERATOR-LINE" not in system and "Refund override" not in system
        knowledge = next(s for s in verified["report"]["slices"] if s["name"] == "knowledge")
        assert knowledge["used"] > 0


async def test_a_document_deleted_through_one_process_leaves_the_other_at_once(
    tmp_path: Path,
) -> None:
    async with (
        database_url("production", tmp_path) as url,
        running_stack("production", tmp_path, database=url) as one,
        running_stack("production", tmp_path, database=url) as two,
    ):
        subscribed = two.app[KNOWLEDGE_FORGETTING].subscribed
        assert subscribed is not None
        await asyncio.wait_for(subscribed.wait(), 5)
        document_id = await _add(one.client, "public")
        # The other process reads it, and keeps it cached for a minute.
        assert _told(await _window(two.client, channel="webchat", external_id="v-1")) == {"public"}

        deleted = await one.client.delete(f"/v1/knowledge/documents/{document_id}", headers=SHOP)
        assert deleted.status in (200, 204), await deleted.text()

        deadline = time.monotonic() + 5  # far inside the cache's 60 seconds
        while True:
            told = _told(await _window(two.client, channel="webchat", external_id="v-1"))
            if not told or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert told == set()
