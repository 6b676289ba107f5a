"""`POST /v1/knowledge/urls` and `POST /v1/knowledge/documents/{id}/sync` on a real gateway
against a help center on loopback (listed in RELAYDESK_FETCH_ALLOW): a page and a sitemap
added, a sync answered 304 and one that replaces the chunks, refusals that say what to fix,
and an agent refused the writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit
from gateway.storage.repositories.operators import OperatorRole
from tests.support.app_settings import AUTH
from tests.support.console import PASSWORD
from tests.support.knowledge_site import help_center
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import running_stack

SHOP = {**AUTH, "Host": "shop.example.com"}


async def _post(
    client: TestClient,  # type: ignore[type-arg]
    path: str,
    body: dict[str, Any] | None = None,
) -> tuple[int, Any]:
    response = await client.post(path, json=body, headers=SHOP)
    return response.status, await response.json()


async def test_a_page_and_a_sitemap_added_and_synced_on_demand(tmp_path: Path) -> None:
    async with (
        help_center() as site,
        running_stack("embedded", tmp_path, RELAYDESK_FETCH_ALLOW="127.0.0.1") as stack,
    ):
        client = stack.client
        url = site.url("/help/returns.md")
        status, added = await _post(
            client, "/v1/knowledge/urls", {"url": url, "audience": "public", "actor": "ana"}
        )
        assert status == 201, added
        [page] = added["pages"]
        assert (added["sitemap"], page["outcome"]) == (False, "added")
        document = page["document"]
        assert (document["title"], document["etag"], document["chunk_count"]) == (
            "Returns",
            '"returns-1"',
            2,
        )
        async with stack.sessions()() as session:
            [entry] = await audit.list_audit(session, subject_id=document["id"])
        assert entry.actor == "ana"

        sync = f"/v1/knowledge/documents/{document['id']}/sync"
        status, synced = await _post(client, sync)
        assert status == 200 and synced["outcome"] == "not_modified"
        assert site.requests_for("/help/returns.md")[-1].if_none_match == '"returns-1"'

        site.change("/help/returns.md", "# Returns\n\nSixty days now.\n", '"returns-2"')
        status, synced = await _post(client, sync)
        assert status == 200 and synced["outcome"] == "replaced"
        assert synced["document"]["chunk_count"] == 1

        site.failing.add("/help/returns.md")
        status, synced = await _post(client, sync)
        assert status == 200 and synced["outcome"] == "failed"
        assert "answered 500" in synced["document"]["sync_error"]
        assert synced["document"]["chunk_count"] == 1

        site.sitemap("/sitemap.xml", ["/help/hours.html"])
        status, mapped = await _post(
            client,
            "/v1/knowledge/urls",
            {"url": site.url("/sitemap.xml"), "audience": "customers", "sitemap": True},
        )
        assert status == 201, mapped
        assert mapped["sitemap"] is True
        assert [(p["outcome"], p["document"]["title"]) for p in mapped["pages"]] == [
            ("added", "Opening hours")
        ]

        # Refusals that say what to fix.
        status, refused = await _post(
            client, "/v1/knowledge/urls", {"url": site.url("/missing.md"), "audience": "public"}
        )
        assert status == 422 and refused["error"] == "url_unreadable"
        assert "answered 404" in refused["detail"]
        status, refused = await _post(
            client, "/v1/knowledge/urls", {"url": url, "audience": "everyone"}
        )
        assert status == 400 and refused["error"] == "unknown_audience"
        status, refused = await _post(
            client, "/v1/knowledge/urls", {"url": "ftp://x.example/a", "audience": "public"}
        )
        assert status == 400
        status, refused = await _post(
            client, "/v1/knowledge/urls", {"url": url, "audience": "public", "sitemap": True}
        )
        assert status == 422 and refused["error"] == "not_a_sitemap"
        status, refused = await _post(client, "/v1/knowledge/documents/nope/sync")
        assert status == 404
        status, uploaded = await _post(
            client, "/v1/knowledge/documents", {"content": "# Notes\n\nHi.", "audience": "public"}
        )
        status, refused = await _post(client, f"/v1/knowledge/documents/{uploaded['id']}/sync")
        assert status == 422 and refused["error"] == "not_a_url_document"


async def test_a_loopback_page_is_refused_unless_listed(tmp_path: Path) -> None:
    async with help_center() as site, running_stack("embedded", tmp_path) as stack:
        status, refused = await _post(
            stack.client,
            "/v1/knowledge/urls",
            {"url": site.url("/help/returns.md"), "audience": "public"},
        )
    assert status == 422 and "loopback" in refused["detail"]
    assert site.seen == []


async def test_an_agent_may_not_add_or_sync(tmp_path: Path) -> None:
    async with help_center() as site, running_stack("embedded", tmp_path) as stack:
        async with stack.sessions().begin() as session:
            await create_operator(session, "ben.agent", PASSWORD, role=OperatorRole.AGENT)
        agent = await operator_logs_in(stack, "ben.agent", PASSWORD)
        assert agent is not None
        body = {"url": site.url("/help/returns.md"), "audience": "public"}
        status, refused = await agent.api("POST", "/v1/knowledge/urls", body)
        assert status == 403 and isinstance(refused, dict) and refused["error"] == "admin_only"
        status, refused = await agent.api("POST", "/v1/knowledge/documents/any/sync", {})
        assert status == 403 and isinstance(refused, dict) and refused["error"] == "admin_only"
    assert site.seen == []
