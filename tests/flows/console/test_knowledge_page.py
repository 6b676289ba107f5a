"""`/console/knowledge` over HTTP: the documents added through the API, each with its audience,
chunk count, date and sync error, for an admin and an agent alike; an empty base says so."""

from __future__ import annotations

from gateway.operators.accounts import create_operator
from gateway.storage.repositories import knowledge
from gateway.storage.repositories.operators import OperatorRole
from tests.support.console import AUTH, log_in
from tests.support.operator_logins import operator_logs_in
from tests.support.stack import Stack

AGENT, AGENT_PASSWORD = "bruno.agent", "another long passphrase"
RETURNS = """# Trocas e devoluções

## Prazo

Você tem 30 dias corridos para devolver um produto.

## Reembolso

O reembolso sai em até 5 dias úteis depois que o produto chega.
"""


async def _add(stack: Stack, body: dict[str, str]) -> dict[str, object]:
    answer = await stack.client.post("/v1/knowledge/documents", json=body, headers=AUTH)
    assert answer.status == 201, await answer.text()
    added: dict[str, object] = await answer.json()
    return added


async def test_every_document_is_listed_with_its_chunks_audience_and_sync_error(
    stack: Stack,
) -> None:
    await log_in(stack.client)
    empty = await stack.client.get("/console/knowledge")
    assert empty.status == 200
    assert "No document yet." in await empty.text()

    returns = await _add(
        stack,
        {"content": RETURNS, "format": "markdown", "audience": "public",
         "url": "https://help.example.com/trocas"},
    )  # fmt: skip
    card = await _add(
        stack, {"content": "Seu limite aparece no app.", "format": "text", "audience": "verified"}
    )
    async with stack.sessions().begin() as session:
        [stored] = [d for d in await knowledge.list_documents(session, None) if d.id == card["id"]]
        await knowledge.record_sync_error(session, stored.tenant, stored.id, "HTTP 404 at source")

    page = await (await stack.client.get("/console/knowledge")).text()
    assert "No document yet." not in page
    assert f'data-document="{returns["id"]}"' in page
    assert 'href="https://help.example.com/trocas"' in page
    assert ">Trocas e devoluções</a>" in page
    assert f'<td class="chunks">{returns["chunk_count"]}</td>' in page
    assert int(str(returns["chunk_count"])) >= 2  # a chunk per section
    assert '<span class="tag">verified</span>' in page
    assert "HTTP 404 at source" in page

    async with stack.sessions().begin() as session:
        await create_operator(session, AGENT, AGENT_PASSWORD, role=OperatorRole.AGENT)
    agent = await operator_logs_in(stack, AGENT, AGENT_PASSWORD)
    assert agent is not None
    status, agent_page, _ = await agent.get("/console/knowledge")
    assert status == 200 and f'data-document="{card["id"]}"' in agent_page
