"""`/v1/knowledge/documents` on a real gateway: documents added as JSON or as their own body,
listed per tenant with chunk counts, read with their chunks, replaced at once (by URL or by
id), deleted with every process told, refusals that say what to fix, and every write audited."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from redis.asyncio import Redis

from gateway.http.openapi import spec
from gateway.knowledge.forgetting import DocumentsForgotten, KnowledgeForgetting
from gateway.operators.accounts import create_operator
from gateway.storage.repositories import audit
from gateway.storage.repositories.operators import OperatorRole
from tests.support.app_settings import AUTH
from tests.support.console import PASSWORD
from tests.support.databases import REDIS_URL
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import running_stack

SHOP = {**AUTH, "Host": "shop.example.com"}
OTHER = {**AUTH, "Host": "other.example.com"}
RETURNS = "# Returns\n\nThirty days with the receipt.\n\n## Refunds\n\nTo the card you paid with.\n"
URL = "https://shop.example.com/help/returns"


async def _call(
    client: TestClient,  # type: ignore[type-arg]
    method: str,
    path: str,
    *,
    headers: dict[str, str] = SHOP,
    **kwargs: Any,
) -> tuple[int, Any]:
    response = await client.request(method, path, headers=headers, **kwargs)
    body = await response.json() if response.status != 204 else None
    return response.status, body


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_added_listed_read_replaced_and_deleted(tmp_path: Path, backend: str) -> None:
    async with running_stack(backend, tmp_path) as stack:
        client = stack.client
        status, added = await _call(
            client,
            "POST",
            "/v1/knowledge/documents",
            json={"content": RETURNS, "audience": "customers", "url": URL, "actor": "ana"},
        )
        assert status == 201, added
        assert added["outcome"] == "added" and added["title"] == "Returns"
        assert added["chunk_count"] >= 1 and added["audience"] == "customers"
        assert added["url"] == URL and added["format"] == "markdown"

        # The same text again rewrites nothing; another text at the URL replaces the chunks.
        status, again = await _call(
            client,
            "POST",
            "/v1/knowledge/documents",
            json={"content": RETURNS, "audience": "customers", "url": URL},
        )
        assert status == 200 and again["outcome"] == "unchanged" and again["id"] == added["id"]
        status, replaced = await _call(
            client,
            "POST",
            "/v1/knowledge/documents",
            json={"content": "# Returns\n\nSixty days now.\n", "audience": "customers", "url": URL},
        )
        assert status == 200 and replaced["outcome"] == "replaced"
        assert replaced["id"] == added["id"]

        status, one = await _call(client, "GET", f"/v1/knowledge/documents/{added['id']}")
        assert status == 200
        assert [c["text"] for c in one["chunks"]] == ["Sixty days now."]
        assert one["chunks"][0]["headings"] == ["Returns"]
        assert one["chunks"][0]["token_count"] > 0

        # The document itself as the body, the query naming the rest.
        status, plain = await _call(
            client,
            "POST",
            "/v1/knowledge/documents?audience=verified&title=Opening%20hours"
            "&updated_at=2026-11-01T09:00:00%2B00:00",
            data=b"Monday to Friday, 9 to 18.",
            headers={**SHOP, "Content-Type": "text/plain"},
        )
        assert status == 201, plain
        assert plain["title"] == "Opening hours" and plain["format"] == "text"
        assert plain["updated_at"].startswith("2026-11-01T09:00:00")

        # A tenant sees its own documents only.
        status, listed = await _call(client, "GET", "/v1/knowledge/documents")
        assert status == 200
        assert {(d["id"], d["chunk_count"]) for d in listed["documents"]} == {
            (added["id"], 1),
            (plain["id"], 1),
        }
        status, elsewhere = await _call(client, "GET", "/v1/knowledge/documents", headers=OTHER)
        assert elsewhere == {"documents": []}
        status, _ = await _call(
            client, "GET", f"/v1/knowledge/documents/{added['id']}", headers=OTHER
        )
        assert status == 404
        status, _ = await _call(
            client, "DELETE", f"/v1/knowledge/documents/{added['id']}", headers=OTHER
        )
        assert status == 404

        # Replaced by id.
        encoded = base64.b64encode(b"# Hours\n\nEvery day, 8 to 20.\n").decode()
        status, put = await _call(
            client,
            "PUT",
            f"/v1/knowledge/documents/{plain['id']}",
            json={"content_base64": encoded, "format": "markdown", "audience": "public"},
        )
        assert status == 200 and put["outcome"] == "replaced" and put["title"] == "Hours"

        # One document per URL: another cannot take it.
        status, taken = await _call(
            client,
            "PUT",
            f"/v1/knowledge/documents/{plain['id']}",
            json={"content": "# Hours\n\nx", "audience": "public", "url": URL},
        )
        assert (status, taken["error"]) == (409, "url_taken")

        status, _ = await _call(client, "DELETE", f"/v1/knowledge/documents/{added['id']}")
        assert status == 204
        status, _ = await _call(client, "GET", f"/v1/knowledge/documents/{added['id']}")
        assert status == 404
        status, _ = await _call(client, "DELETE", f"/v1/knowledge/documents/{added['id']}")
        assert status == 404

        async with stack.sessions()() as session:
            entries = await audit.list_audit(session, subject_id=added["id"])
        assert sorted(e.action for e in entries) == [
            "knowledge.document_deleted",
            "knowledge.document_stored",
            "knowledge.document_stored",
            "knowledge.document_stored",
        ]
        assert {e.actor for e in entries} >= {"ana"}


async def test_a_deletion_reaches_every_process(tmp_path: Path) -> None:
    async with running_stack("production", tmp_path) as stack:
        other_process = Redis.from_url(REDIS_URL)
        listener = KnowledgeForgetting(other_process)
        heard: list[DocumentsForgotten] = []
        listener.on_forget(heard.append)
        listener.listen()
        assert listener.subscribed is not None
        await asyncio.wait_for(listener.subscribed.wait(), 5)
        try:
            status, added = await _call(
                stack.client,
                "POST",
                "/v1/knowledge/documents",
                json={"content": RETURNS, "audience": "public"},
            )
            assert status == 201
            status, _ = await _call(
                stack.client, "DELETE", f"/v1/knowledge/documents/{added['id']}"
            )
            assert status == 204
            for _ in range(250):
                if heard:
                    break
                await asyncio.sleep(0.02)
            assert heard == [DocumentsForgotten("default/shop.example.com", (added["id"],))]
        finally:
            await listener.close()
            await other_process.aclose()


async def test_refusals_say_what_to_fix(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        client = stack.client
        path = "/v1/knowledge/documents"
        cases: list[tuple[dict[str, Any], int, str]] = [
            ({"json": {"content": RETURNS, "audience": "staff"}}, 400, "unknown_audience"),
            ({"json": {"content": RETURNS}}, 400, "invalid_body"),
            ({"json": {"audience": "public"}}, 400, "invalid_body"),
            (
                {"json": {"content_base64": "***", "format": "pdf", "audience": "public"}},
                400,
                "invalid_body",
            ),
            (
                {"json": {"content": "x", "audience": "public", "url": "ftp://x"}},
                400,
                "invalid_body",
            ),
            (
                {"data": b"%PDF-1.4 not really", "headers": {**SHOP, "Content-Type": "image/png"}},
                415,
                "unsupported_media_type",
            ),
            (
                {"data": b"hello", "headers": {**SHOP, "Content-Type": "text/plain"}},
                400,
                "unknown_audience",
            ),
            (
                {
                    "json": {
                        "content_base64": base64.b64encode(b"not a pdf at all").decode(),
                        "format": "pdf",
                        "audience": "public",
                    }
                },
                422,
                "document_unreadable",
            ),
            ({"json": {"content": "   \n\n  ", "audience": "public"}}, 422, "document_unreadable"),
        ]
        for kwargs, status, code in cases:
            kwargs.setdefault("headers", SHOP)
            answer, body = await _call(client, "POST", path, **kwargs)
            assert (answer, body["error"]) == (status, code), (kwargs, body)
            assert body["detail"]

        status, body = await _call(client, "GET", path, headers={"Host": "shop.example.com"})
        assert status == 401
        status, _ = await _call(
            client, "PUT", f"{path}/nosuchdocument", json={"content": "x", "audience": "public"}
        )
        assert status == 404
        # Nothing was stored by any refusal.
        status, listed = await _call(client, "GET", path)
        assert listed == {"documents": []}


async def test_a_document_over_the_limit_is_refused(tmp_path: Path) -> None:
    limit = 5 * 1024 * 1024
    async with running_stack("embedded", tmp_path, RELAYDESK_MAX_BODY_BYTES=limit) as stack:
        status, body = await _call(
            stack.client,
            "POST",
            "/v1/knowledge/documents?audience=public",
            data=io.BytesIO(b"a" * (4 * 1024 * 1024 + 1)),
            headers={**SHOP, "Content-Type": "text/plain"},
        )
        assert (status, body["error"]) == (413, "document_too_large")
        # Over the gateway's own limit: refused before it is read.
        status, body = await _call(
            stack.client,
            "POST",
            "/v1/knowledge/documents?audience=public",
            data=io.BytesIO(b"a" * (limit + 1)),
            headers={**SHOP, "Content-Type": "text/plain"},
        )
        assert status == 413


async def test_an_admin_login_writes_with_its_csrf_token_and_an_agent_only_reads(
    tmp_path: Path,
) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        async with stack.sessions().begin() as session:
            await create_operator(session, "ana.admin", PASSWORD, role=OperatorRole.ADMIN)
            await create_operator(session, "ben.agent", PASSWORD, role=OperatorRole.AGENT)
        admin = await operator_logs_in(stack, "ana.admin", PASSWORD)
        agent = await operator_logs_in(stack, "ben.agent", PASSWORD)
        assert admin is not None and agent is not None
        body = {"content": RETURNS, "audience": "public"}
        status, added = await admin.api("POST", "/v1/knowledge/documents", body)
        assert status == 201, added
        assert isinstance(added, dict)
        async with stack.sessions()() as session:
            [entry] = await audit.list_audit(session, subject_id=added["id"])
        assert entry.actor == "ana.admin"

        # What the bot tells customers is an admin's call; an agent reads it.
        status, listed = await agent.api("GET", "/v1/knowledge/documents")
        assert status == 200 and isinstance(listed, dict) and len(listed["documents"]) == 1
        status, refused = await agent.api("POST", "/v1/knowledge/documents", body)
        assert status == 403 and isinstance(refused, dict) and refused["error"] == "admin_only"
        status, refused = await agent.api("DELETE", f"/v1/knowledge/documents/{added['id']}")
        assert status == 403 and isinstance(refused, dict) and refused["error"] == "admin_only"

        admin.csrf = "not-the-token"
        status, refused = await admin.api("DELETE", f"/v1/knowledge/documents/{added['id']}")
        assert status == 403 and isinstance(refused, dict)
        assert refused["error"] == "csrf_failed"


def test_the_routes_are_in_the_api_document() -> None:
    paths = spec()["paths"]
    assert set(paths["/v1/knowledge/documents"]) == {"get", "post"}
    assert set(paths["/v1/knowledge/documents/{document_id}"]) == {"get", "put", "delete"}
    post = paths["/v1/knowledge/documents"]["post"]
    assert {"201", "409", "413", "415", "422"} <= set(post["responses"])
