"""The background embedding loop against a local OpenAI-compatible server, on both databases:
rows get their vectors (a call's turns masked first), a failure is retried and a row the
provider keeps refusing is skipped without holding back the rest, two processes store each row
once, and a row deleted while its batch is embedded, or after, keeps no vector."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from datetime import UTC, datetime

import httpx
import numpy as np
import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.openai_compatible import OpenAICompatEmbedder
from gateway.storage.models import Customer, Episode, Message
from gateway.storage.models_embeddings import Embedding
from gateway.storage.repositories import embeddings, message_erasure
from tests.gateway.embeddings.conftest import StartEmbeddings
from tests.support.openai_embeddings_server import FakeEmbeddings, Fault

AT = datetime(2026, 12, 5, 5, tzinfo=UTC)
DIMENSION = 8


async def _conversation(
    sessions: async_sessionmaker[AsyncSession], texts: list[str], *, channel: str = "telegram"
) -> tuple[str, list[int]]:
    customer_id = uuid.uuid4().hex
    async with sessions.begin() as session:
        session.add(Customer(id=customer_id, created_at=AT, updated_at=AT))
        episode = Episode(customer_id=customer_id, channel=channel, tenant="t1")
        session.add(episode)
        await session.flush()
        rows = [
            Message(
                customer_id=customer_id,
                episode_id=episode.id,
                channel=channel,
                role="user" if n % 2 == 0 else "assistant",
                text=text,
                token_count=3,
                transcript_confidence=0.9 if channel == "phone" else None,
                tenant="t1",
                created_at=AT,
            )
            for n, text in enumerate(texts)
        ]
        session.add_all(rows)
        await session.flush()
        return customer_id, [row.id for row in rows]


def _loop(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    url: str,
    model: str,
    first_id: int,
    **options: float,
) -> BackgroundEmbedder:
    """A loop whose cursor starts at the test's first row: the rows other tests left in the
    shared database are not this test's to embed."""
    embedder = OpenAICompatEmbedder(http, model=model, base_url=url, batch_size=64)
    return BackgroundEmbedder(
        sessions,
        embedder,
        batch=4,
        start_after={"message": first_id - 1, "knowledge_chunk": 1 << 62},
        **options,  # type: ignore[arg-type]
    )


async def _vectors(sessions: async_sessionmaker[AsyncSession], customer: str, model: str):  # type: ignore[no-untyped-def]
    async with sessions() as session:
        return await embeddings.customer_vectors(session, customer, model)


async def _stored(sessions: async_sessionmaker[AsyncSession], model: str) -> int:
    async with sessions() as session:
        count = await session.scalar(
            select(func.count()).select_from(Embedding).where(Embedding.model == model)
        )
    return int(count or 0)


async def _until(condition, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.02)


async def test_rows_get_their_vectors_in_batches_a_call_masked_first(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    fake = FakeEmbeddings(dimension=DIMENSION)
    url = await start_embeddings(fake)
    customer, ids = await _conversation(sessions, [f"line {n}" for n in range(10)])
    caller, [spoken] = await _conversation(
        sessions, ["write to ana.souza@example.com please"], channel="phone"
    )
    silent, [blank] = await _conversation(sessions, [" \n "])
    loop = _loop(sessions, http, url, model, ids[0])

    burst = await loop.drain()

    assert burst.rows == 11
    vectors = await _vectors(sessions, customer, model)
    assert vectors.subject_ids == tuple(reversed(ids))
    assert vectors.matrix.shape == (10, DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors.matrix, axis=1), 1.0, rtol=1e-5)
    assert (await _vectors(sessions, caller, model)).subject_ids == (spoken,)
    assert len(await _vectors(sessions, silent, model)) == 0  # nothing to embed, not retried
    sent = [text for request in fake.requests for text in request.inputs]
    assert all(len(request.inputs) <= 4 for request in fake.requests)
    assert not any("ana.souza@example.com" in text for text in sent)
    assert any(text.startswith("write to [") for text in sent)
    # Nothing left: a second drain embeds nothing and asks the server nothing.
    asked = len(fake.requests)
    assert (await loop.drain()).rows == 0
    assert len(fake.requests) == asked


async def test_a_failure_is_logged_and_retried_then_everything_stored(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    refused = Fault(400, {"error": {"message": "bad request"}})
    fake = FakeEmbeddings(dimension=DIMENSION, faults=deque([refused, refused]))
    url = await start_embeddings(fake)
    customer, ids = await _conversation(sessions, [f"line {n}" for n in range(6)])
    loop = _loop(
        sessions, http, url, model, ids[0], first_run_after_s=0, idle_s=0.05, first_backoff_s=0.01
    )
    with caplog.at_level(logging.WARNING, "relaydesk.embeddings"):
        loop.start()
        try:
            await _until(lambda: _has(sessions, customer, model, len(ids)))
        finally:
            await loop.close()
    assert [r.getMessage() for r in caplog.records].count("embedding failed, retried later") == 2
    assert (await _vectors(sessions, customer, model)).subject_ids == tuple(reversed(ids))


async def _has(
    sessions: async_sessionmaker[AsyncSession], customer: str, model: str, count: int
) -> bool:
    return len(await _vectors(sessions, customer, model)) == count


async def test_a_row_the_provider_keeps_refusing_is_skipped_and_the_rest_stored(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    fake = FakeEmbeddings(dimension=DIMENSION)

    def answer(inputs: list[str]) -> object:
        if any(text.endswith(": poison") for text in inputs):
            return {"data": []}  # no vectors: a malformed answer, EmbeddingFailed
        return {
            "data": [
                {"index": n, "embedding": [1.0 + n + len(text)] + [0.5] * (DIMENSION - 1)}
                for n, text in enumerate(inputs)
            ]
        }

    fake.answer = answer
    url = await start_embeddings(fake)
    customer, ids = await _conversation(sessions, ["a", "b", "poison", "c", "d", "e"])
    loop = _loop(
        sessions, http, url, model, ids[0], first_run_after_s=0, idle_s=0.05, first_backoff_s=0.001
    )
    loop.start()
    try:
        await _until(lambda: _has(sessions, customer, model, len(ids) - 1))
    finally:
        await loop.close()
    kept = (await _vectors(sessions, customer, model)).subject_ids
    assert ids[2] not in kept
    assert set(kept) == set(ids) - {ids[2]}


async def test_two_processes_store_each_row_once(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    fake = FakeEmbeddings(dimension=DIMENSION, delay_s=0.01)
    url = await start_embeddings(fake)
    customer, ids = await _conversation(sessions, [f"line {n}" for n in range(20)])
    first = _loop(sessions, http, url, model, ids[0])
    second = _loop(sessions, http, url, model, ids[0])

    await asyncio.gather(first.drain(), second.drain())

    assert (await _vectors(sessions, customer, model)).subject_ids == tuple(reversed(ids))
    # Whatever both computed, what they stored adds up to one vector per row.
    assert first.embedded + second.embedded == await _stored(sessions, model)
    async with sessions() as session:
        per_message = await session.execute(
            select(Embedding.message_id, func.count())
            .where(Embedding.model == model, Embedding.message_id.in_(ids))
            .group_by(Embedding.message_id)
        )
        assert {message_id: count for message_id, count in per_message} == dict.fromkeys(ids, 1)


async def test_two_running_loops_never_send_a_text_twice_on_postgresql(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    fake = FakeEmbeddings(dimension=DIMENSION, delay_s=0.05)
    url = await start_embeddings(fake)
    texts = [f"said {uuid.uuid4().hex}" for _ in range(16)]
    customer, ids = await _conversation(sessions, texts)
    loops = [
        _loop(sessions, http, url, model, ids[0], first_run_after_s=0, idle_s=0.05)
        for _ in range(2)
    ]
    for loop in loops:
        loop.start()
    try:
        await _until(lambda: _has(sessions, customer, model, len(ids)))
    finally:
        for loop in loops:
            await loop.close()
    sent = [text for request in fake.requests for text in request.inputs]
    if sessions.kw["bind"].dialect.name == "postgresql":
        # One process held the lease and embedded everything (SQLite serves one process).
        # Each as recall shows it: who said it, then the text.
        assert sorted(text.split(": ", 1)[1] for text in sent) == sorted(texts)
        assert sorted(loop.embedded for loop in loops) == [0, len(texts)]
    assert sum(loop.embedded for loop in loops) == len(texts)


async def test_a_row_committed_behind_the_cursor_is_still_embedded(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    url = await start_embeddings(FakeEmbeddings(dimension=DIMENSION))
    customer, ids = await _conversation(sessions, ["early", "late", "newest"])
    # "late" took its id before "newest" but is seen only after "newest" was embedded (its
    # transaction committed later): here its vector is made to be missing after a first pass.
    loop = _loop(sessions, http, url, model, ids[0])
    await loop.drain()
    async with sessions.begin() as session:
        await session.execute(delete(Embedding).where(Embedding.message_id == ids[1]))
    assert (await loop.drain()).rows == 1
    assert (await _vectors(sessions, customer, model)).subject_ids == tuple(reversed(ids))


async def test_a_row_deleted_during_or_after_its_batch_keeps_no_vector(
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient,
    start_embeddings: StartEmbeddings,
) -> None:
    model = f"m-{uuid.uuid4().hex}"
    fake = FakeEmbeddings(dimension=DIMENSION, delay_s=0.3)
    url = await start_embeddings(fake)
    customer, ids = await _conversation(sessions, ["kept", "erased meanwhile", "erased after"])
    loop = _loop(sessions, http, url, model, ids[0])

    async def erase_while_embedding() -> None:
        await _until(lambda: _asked(fake))
        async with sessions.begin() as session:
            await message_erasure.erase_messages(session, [ids[1]])

    await asyncio.gather(loop.drain(), erase_while_embedding())
    assert set((await _vectors(sessions, customer, model)).subject_ids) == {ids[0], ids[2]}

    async with sessions.begin() as session:
        await message_erasure.erase_messages(session, [ids[2]])
    assert (await _vectors(sessions, customer, model)).subject_ids == (ids[0],)


async def _asked(fake: FakeEmbeddings) -> bool:
    return bool(fake.requests)
