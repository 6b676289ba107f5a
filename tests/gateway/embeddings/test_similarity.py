"""Hybrid recall on a reply's path, on both databases, through a local OpenAI-compatible
embeddings server that gives scripted vectors: a past line sharing no word with the message is
recalled once the background has stored its vector; a customer with no stored vector costs no
embedding; a message whose vector comes too late is ranked lexically and its vector serves the
next window; the stored vectors are read again once stale."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import cast

import httpx
import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TiktokenCounter, load_encoding
from context.recall_score import RecallCandidate
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.cache import CachedEmbedder
from gateway.embeddings.openai_compatible import OpenAICompatEmbedder
from gateway.embeddings.similarity import (
    HybridSimilarity,
    QueryBudget,
    RecallVectors,
    StoredVectorShelf,
)
from gateway.memory.recall import RecallCache
from gateway.storage.records import NewMessage
from gateway.storage.repositories import episodes, messages
from gateway.storage.repositories.embeddings import StoredVectors
from gateway.tenants import TenantSettings
from gateway.turns.window import assemble_context
from identity import WhatsAppSender, observe
from tests.gateway.embeddings.conftest import StartEmbeddings
from tests.support.openai_embeddings_server import FakeEmbeddings

COUNTER = TiktokenCounter(load_encoding())
EVIDENCE = "I started kickboxing classes last month, twice a week."
FILLER = (
    "The weather was nice today.",
    "My order number is on the receipt.",
    "Thanks, that helps a lot.",
)
QUESTION = "which martial art do I practise?"


def _scripted(inputs: list[str]) -> dict[str, object]:
    """One axis for fighting sports, another for everything else."""

    def vector(text: str) -> list[float]:
        fighting = "kickboxing" in text or "martial" in text
        return [1.0, 0.0, 0.0, 0.0] if fighting else [0.0, 1.0, 0.0, 0.0]

    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": vector(t)}
            for i, t in enumerate(inputs)
        ],
        "model": "scripted",
        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
    }


async def _history(sessions: async_sessionmaker[AsyncSession]) -> tuple[ResolvedIdentity, int]:
    """A customer who writes on WhatsApp, with one past web chat conversation; the id of its
    first message."""
    async with sessions.begin() as session:
        number = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
        owner = await resolve_identity(session, observe(WhatsAppSender(number)))
        chat = await episodes.open_episode(
            session,
            customer_id=owner.customer_id,
            channel="webchat",
            identity_id=None,
        )
        ids = []
        for text in (EVIDENCE, *FILLER):
            stored = await messages.append_message(
                session,
                NewMessage(
                    owner.customer_id,
                    chat.id,
                    "webchat",
                    "user",
                    text,
                    COUNTER.count(text),
                    None,
                ),
            )
            ids.append(stored.id)
    return owner, min(ids)


def _embedder(http: httpx.AsyncClient, url: str) -> OpenAICompatEmbedder:
    return OpenAICompatEmbedder(http, model="scripted", base_url=url)


async def _window_text(
    sessions: async_sessionmaker[AsyncSession], owner: ResolvedIdentity, cache: RecallCache
) -> str:
    async with sessions() as session:
        assembled = await assemble_context(
            session,
            identity=owner,
            settings=TenantSettings(),
            counter=COUNTER,
            message=QUESTION,
            recall_cache=cache,
        )
    return assembled.window.messages[0].content


async def test_a_line_sharing_no_word_is_recalled_once_it_has_a_vector(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    fake = FakeEmbeddings(answer=_scripted)
    url = await start_embeddings(fake)
    owner, first_id = await _history(sessions)
    similarity = HybridSimilarity(_embedder(http, url), "scripted")
    hybrid = RecallCache(similarity=RecallVectors(similarity))

    assert EVIDENCE not in await _window_text(sessions, owner, RecallCache())
    # No stored vector yet: ranked lexically, and the message is not even embedded.
    assert EVIDENCE not in await _window_text(sessions, owner, hybrid)
    assert fake.requests == []

    loop = BackgroundEmbedder(
        sessions,
        _embedder(http, url),
        start_after={"message": first_id - 1, "knowledge_chunk": 1 << 62},
    )
    while await loop.step() is not None:
        pass
    assert loop.embedded == 1 + len(FILLER)
    similarity.shelf.forget(("customer", owner.customer_id))  # as if half a minute went by

    assert EVIDENCE in await _window_text(sessions, owner, hybrid)
    assert EVIDENCE not in await _window_text(sessions, owner, RecallCache())
    # The message was embedded once, as a question, for the one window that could use it.
    asked = [request.inputs for request in fake.requests if request.inputs == [QUESTION]]
    assert len(asked) == 1


async def test_a_late_vector_ranks_lexically_and_serves_the_next_message(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(answer=_scripted, delay_s=0.4)
    url = await start_embeddings(fake)
    similarity = HybridSimilarity(CachedEmbedder(_embedder(http, url)), "scripted", deadline_s=0.05)

    assert await similarity.query_vector(QUESTION) is None
    assert similarity.late == 1
    await asyncio.sleep(0.6)  # the vector arrives after the reply went on without it
    vector = await similarity.query_vector(QUESTION)
    assert vector is not None and vector.tolist() == [1.0, 0.0, 0.0, 0.0]
    assert similarity.late == 1
    assert len(fake.requests) == 1


async def test_the_stored_vectors_are_read_again_once_stale() -> None:
    now = [0.0]
    shelf = StoredVectorShelf(reread_after_s=30.0, clock=lambda: now[0])
    reads: list[int] = []

    async def read() -> StoredVectors:
        reads.append(1)
        return StoredVectors.empty()

    await shelf.get(("customer", "c1"), read)
    now[0] = 29.0
    await shelf.get(("customer", "c1"), read)
    assert len(reads) == 1
    now[0] = 30.0
    await shelf.get(("customer", "c1"), read)
    assert len(reads) == 2


async def test_a_line_gets_its_message_vector_only_when_the_message_is_that_line(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    """A typed turn or a call stored a turn a message is compared; a turn of a transcript of
    many turns (embedded whole) and a summary sentence (no vector) are not."""
    fake = FakeEmbeddings(answer=_scripted)
    url = await start_embeddings(fake)
    similarity = HybridSimilarity(_embedder(http, url), "scripted")
    stored = StoredVectors((7,), np.asarray([[1.0, 0.0, 0.0, 0.0]], dtype=np.float32))
    at = datetime(2026, 12, 5, tzinfo=UTC)

    async def read() -> StoredVectors:
        return stored

    await similarity.shelf.get(("customer", "c1"), read)  # on the shelf: no read below
    one_line = [
        RecallCandidate("e1", 7, "turn", "Customer", EVIDENCE, at, confidence=0.8),
        RecallCandidate("e1", 7, "sentence", "Customer", EVIDENCE, at),
        RecallCandidate("e1", 8, "turn", "Customer", "no vector yet", at),
    ]
    recall_vectors = RecallVectors(similarity)
    nobody = cast(AsyncSession, None)
    scores = await recall_vectors(QUESTION, one_line, session=nobody, customer_id="c1")
    assert scores == (1.0, None, None)
    # A call stored as one transcript of two turns: its vector stands for neither turn.
    two_turns = [
        RecallCandidate("e1", 7, "turn", "Customer", EVIDENCE, at, confidence=0.8),
        RecallCandidate("e1", 7, "turn", "Agent", "Noted.", at, position=1, confidence=0.8),
    ]
    scores = await recall_vectors(QUESTION, two_turns, session=nobody, customer_id="c1")
    assert scores == (None, None)


async def test_past_its_cpu_budget_a_process_ranks_lexically_until_the_window_frees_up(
    http: httpx.AsyncClient, start_embeddings: StartEmbeddings
) -> None:
    fake = FakeEmbeddings(answer=_scripted)
    url = await start_embeddings(fake)
    now = [0.0]
    # 10 % of one CPU over 10 s: one second of embedding.
    budget = QueryBudget(share=0.1, window_s=10.0, clock=lambda: now[0])
    similarity = HybridSimilarity(_embedder(http, url), "scripted", budget=budget)

    assert await similarity.query_vector("first message") is not None
    budget.spend(1.0)  # as if the embedder had worked a whole second
    assert await similarity.query_vector("second message") is None
    assert similarity.over_budget == 1
    assert len(fake.requests) == 1  # nothing was even asked of the embedder
    now[0] = 10.0  # the window moved past what was spent
    assert await similarity.query_vector("second message") is not None
    assert len(fake.requests) == 2
    assert QueryBudget.unlimited().allows()
