"""The knowledge slice ranks by meaning on a real gateway with the offline model: a question
sharing no word with the page that answers it is told that page once the background has
embedded the chunks, and only that page; a question the documents do not answer is told
none. With embeddings off the same question is told nothing (lexical ranking alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from context.recall_score import recall_terms
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.offline import OfflineEmbedder
from tests.support.app_settings import AUTH
from tests.support.stack import Stack, running_stack

SHOP = {**AUTH, "Host": "shop.example.com"}
DOCUMENTS = {
    "Exchanges": "Items may be exchanged or refunded within thirty days after delivery, "
    "unused and in their original box.",
    "Delivery times": "Orders to the Northeast arrive in five to nine business days; "
    "capitals are faster.",
    "Payment methods": "We accept credit cards, boleto and Pix at checkout.",
    "Store hours": "Physical stores open at 9am on weekdays and 10am on Saturdays.",
}
QUESTION = "Can I send the sneakers back if they don't fit?"
UNANSWERED = "Who won the chess olympiad in 1976?"


async def _add_documents(client: TestClient) -> None:  # type: ignore[type-arg]
    for title, text in DOCUMENTS.items():
        response = await client.post(
            "/v1/knowledge/documents",
            json={"content": text, "format": "text", "title": title, "audience": "public"},
            headers=SHOP,
        )
        assert response.status == 201, await response.text()


async def _window(client: TestClient, message: str) -> dict[str, Any]:  # type: ignore[type-arg]
    response = await client.post(
        "/v1/context",
        json={"message": message, "channel": "webchat", "external_id": "visitor-31"},
        headers=SHOP,
    )
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    return body


def _told(body: dict[str, Any]) -> list[str]:
    system = body["messages"][0]["content"]
    return [title for title in DOCUMENTS if f"{title} (" in system]


async def _embed_everything(stack: Stack) -> int:
    embedder = OfflineEmbedder()
    loop = BackgroundEmbedder(stack.sessions(), embedder, batch=16)
    stored = 0
    try:
        while (step := await loop.step()) is not None:
            stored += step
    finally:
        await embedder.close()
    return stored


def test_the_question_shares_no_word_with_the_documents() -> None:
    asked = set(recall_terms(QUESTION)) | set(recall_terms(UNANSWERED))
    for title, text in DOCUMENTS.items():
        assert not asked & set(recall_terms(f"{title} {text}")), title


async def test_a_page_is_found_by_meaning_once_its_chunks_are_embedded(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        await _add_documents(stack.client)
        assert await _embed_everything(stack) >= len(DOCUMENTS)

        answered = await _window(stack.client, QUESTION)
        assert _told(answered) == ["Exchanges"]
        assert "[k1] Exchanges (" in answered["messages"][0]["content"]
        knowledge = next(s for s in answered["report"]["slices"] if s["name"] == "knowledge")
        assert knowledge["used"] > 0

        unanswered = await _window(stack.client, UNANSWERED)
        assert _told(unanswered) == []
        knowledge = next(s for s in unanswered["report"]["slices"] if s["name"] == "knowledge")
        assert knowledge["used"] == 0


async def test_without_embeddings_the_ranking_is_lexical(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path, RELAYDESK_EMBEDDINGS_PROVIDER="off") as stack:
        await _add_documents(stack.client)
        assert _told(await _window(stack.client, QUESTION)) == []
        assert _told(await _window(stack.client, "What are the store hours?")) == ["Store hours"]
