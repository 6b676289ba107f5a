""" "Sync now" on the console's Knowledge page: shown to an admin beside each URL document (not
an uploaded one), posted with the login's CSRF token, reading the page again (a 304 with the
document's ETag, then new chunks once it changed), the outcome shown; a form without the token
changes nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.operators.accounts import create_operator
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import AUTH, PASSWORD, USERNAME, log_in
from tests.support.knowledge_site import HelpCenter, help_center
from tests.support.stack import Stack, running_stack

RETURNS = "/help/returns.md"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Stack, HelpCenter]]:
    async with (
        help_center() as site,
        running_stack("embedded", tmp_path, RELAYDESK_FETCH_ALLOW="127.0.0.1") as running,
    ):
        async with running.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD, role=OperatorRole.ADMIN)
        yield running, site


async def test_sync_now_reads_a_url_document_again(served: tuple[Stack, HelpCenter]) -> None:
    stack, site = served
    client = stack.client
    added = await client.post(
        "/v1/knowledge/urls",
        json={"url": site.url(RETURNS), "audience": "public"},
        headers=AUTH,
    )
    assert added.status == 201, await added.text()
    document = (await added.json())["pages"][0]["document"]
    uploaded = await client.post(
        "/v1/knowledge/documents", json={"content": "# Notes\n\nHi.", "audience": "public"},
        headers=AUTH,
    )  # fmt: skip
    assert uploaded.status == 201

    token = await log_in(client)
    page = await (await client.get("/console/knowledge")).text()
    forms = re.findall(r'action="/console/knowledge/([^/"]+)/sync"', page)
    assert forms == [document["id"]]  # the uploaded one has nothing to fetch
    form = {"csrf_token": token, "tenant": document_tenant(page, document["id"])}

    synced = await client.post(
        f"/console/knowledge/{document['id']}/sync", data=form, allow_redirects=False
    )
    assert synced.status == 303
    assert site.requests_for(RETURNS)[-1].if_none_match == '"returns-1"'
    shown = await (await client.get(synced.headers["Location"])).text()
    assert "not modified" in shown

    site.change(RETURNS, "# Returns\n\nSixty days now.\n", '"returns-2"')
    synced = await client.post(f"/console/knowledge/{document['id']}/sync", data=form)
    assert synced.status == 200 and "replaced" in await synced.text()
    one = await client.get(f"/v1/knowledge/documents/{document['id']}", headers=AUTH)
    assert [c["text"] for c in (await one.json())["chunks"]] == ["Sixty days now."]

    requests = len(site.seen)
    refused = await client.post(
        f"/console/knowledge/{document['id']}/sync",
        data={**form, "csrf_token": "wrong"},
    )
    assert refused.status == 403 and len(site.seen) == requests


def document_tenant(page: str, document_id: str) -> str:
    """The tenant the page's form for the document carries."""
    form = page.split(f'action="/console/knowledge/{document_id}/sync"', 1)[1]
    found = re.search(r'name="tenant" value="([^"]+)"', form)
    assert found is not None
    return found.group(1)
