"""Vectors beside their rows: which rows still need one (what recall ranks, oldest first, past
a cursor), stored once per subject and model, read back as a float32 matrix newest first and
bounded, and gone with their subject: a message erased, a customer erased, a knowledge
document replaced."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.embeddings.vectors import to_float32, unit_vector
from gateway.knowledge.records import Chunk, ParsedDocument
from gateway.storage.models import Customer, Episode, Message
from gateway.storage.models_embeddings import Embedding
from gateway.storage.models_knowledge import KnowledgeChunk
from gateway.storage.repositories import (
    embeddings,
    erasure,
    knowledge,
    knowledge_sync,
    message_erasure,
)
from gateway.storage.repositories.embeddings import NewVector
from gateway.storage.repositories.knowledge import NewDocument
from identity.audience import Audience
from tests.support.databases import DatabaseUnderTest

AT = datetime(2026, 12, 5, 5, tzinfo=UTC)
MODEL = "test-model"


async def _customer(session: AsyncSession, customer_id: str, channel: str = "telegram") -> str:
    session.add(Customer(id=customer_id, created_at=AT, updated_at=AT))
    episode_id = f"ep-{customer_id}-{channel}"
    session.add(Episode(id=episode_id, customer_id=customer_id, channel=channel, tenant="t1"))
    await session.flush()
    return episode_id


async def _message(
    session: AsyncSession,
    customer_id: str,
    episode_id: str,
    text: str,
    *,
    role: str = "user",
    channel: str = "telegram",
    confidence: float | None = None,
    extra: dict[str, object] | None = None,
) -> int:
    row = Message(
        customer_id=customer_id,
        episode_id=episode_id,
        channel=channel,
        role=role,
        text=text,
        token_count=3,
        transcript_confidence=confidence,
        extra=extra,
        tenant="t1",
        created_at=AT,
    )
    session.add(row)
    await session.flush()
    return row.id


def _vector(values: list[float]) -> bytes:
    return to_float32(unit_vector(values))


def _new(kind: str, subject_id: int, values: list[float], customer: str | None) -> NewVector:
    return NewVector(
        kind=kind,  # type: ignore[arg-type]
        subject_id=subject_id,
        tenant="t1",
        customer_id=customer,
        model=MODEL,
        vector=_vector(values),
        dimensions=len(values),
    )


async def _last_id(session: AsyncSession, column: Any) -> int:
    return int(await session.scalar(select(func.max(column))) or 0)


async def _count(session: AsyncSession) -> int:
    counted = select(func.count()).select_from(Embedding).where(Embedding.model == MODEL)
    return int(await session.scalar(counted) or 0)


async def test_pending_messages_are_what_recall_ranks_oldest_first_past_the_cursor(
    session: AsyncSession,
) -> None:
    floor = await _last_id(session, Message.id)  # rows other tests committed are not read
    episode = await _customer(session, "cu1")
    asked = await _message(session, "cu1", episode, "Where is my order?")
    answered = await _message(session, "cu1", episode, "It left today.", role="assistant")
    await _message(session, "cu1", episode, "system note", role="system")
    await _message(
        session, "cu1", episode, "Sorry, try later", role="assistant", extra={"canned": "fallback"}
    )
    await _message(session, "cu1", episode, "voice note words", confidence=0.7)
    await _message(session, "cu1", episode, "   ")  # a photo without a caption
    call = await _customer(session, "cu2", channel="phone")
    spoken = await _message(
        session, "cu2", call, "my e-mail is ana@example.com", channel="phone", confidence=0.8
    )

    pending = await embeddings.pending_messages(session, MODEL, after=floor, limit=10)
    assert [(p.subject_id, p.transcript, p.customer_id) for p in pending] == [
        (asked, False, "cu1"),
        (answered, False, "cu1"),
        (spoken, True, "cu2"),
    ]
    # As recall shows the line: who said it (the role's name without a speaker), then the text.
    assert pending[0].text == "Customer: Where is my order?" and pending[0].tenant == "t1"
    assert [
        p.subject_id
        for p in await embeddings.pending_messages(session, MODEL, after=floor, limit=1)
    ] == [asked]
    past = await embeddings.pending_messages(session, MODEL, after=asked, limit=10)
    assert [p.subject_id for p in past] == [answered, spoken]

    assert await embeddings.store_vectors(session, [_new("message", asked, [1, 0], "cu1")]) == 1
    still = await embeddings.pending_messages(session, MODEL, after=floor, limit=10)
    assert [p.subject_id for p in still] == [answered, spoken]
    # Another model's vector does not count for this one.
    other = await embeddings.pending_messages(session, "other-model", after=floor, limit=10)
    assert [p.subject_id for p in other] == [asked, answered, spoken]


async def test_a_vector_is_stored_once_per_subject_and_model(session: AsyncSession) -> None:
    episode = await _customer(session, "cu1")
    first = await _message(session, "cu1", episode, "one")
    second = await _message(session, "cu1", episode, "two")
    stored = await embeddings.store_vectors(
        session, [_new("message", first, [1, 0], "cu1"), _new("message", second, [0, 1], "cu1")]
    )
    assert stored == 2
    # A second process that embedded the same rows stores nothing and fails nothing.
    again = await embeddings.store_vectors(
        session, [_new("message", first, [0, 1], "cu1"), _new("message", second, [1, 1], "cu1")]
    )
    assert again == 0
    assert await _count(session) == 2
    vectors = await embeddings.customer_vectors(session, "cu1", MODEL)
    assert vectors.subject_ids == (second, first)
    assert vectors.matrix.dtype == np.float32
    np.testing.assert_allclose(vectors.matrix, [[0.0, 1.0], [1.0, 0.0]])


async def test_a_row_names_exactly_the_subject_of_its_kind(session: AsyncSession) -> None:
    episode = await _customer(session, "cu1")
    message_id = await _message(session, "cu1", episode, "one")
    session.add(
        Embedding(
            kind="knowledge_chunk",
            message_id=message_id,
            tenant="t1",
            model=MODEL,
            dimensions=2,
            vector=_vector([1, 0]),
        )
    )
    with pytest.raises(IntegrityError):
        async with session.begin_nested():
            await session.flush()


async def test_a_subject_deleted_meanwhile_is_skipped_and_the_rest_stored(
    session: AsyncSession,
) -> None:
    episode = await _customer(session, "cu1")
    kept = await _message(session, "cu1", episode, "kept")
    erased = await _message(session, "cu1", episode, "erased")
    await message_erasure.erase_messages(session, [erased])
    stored = await embeddings.store_vectors(
        session, [_new("message", kept, [1, 0], "cu1"), _new("message", erased, [0, 1], "cu1")]
    )
    assert stored == 1
    assert (await embeddings.customer_vectors(session, "cu1", MODEL)).subject_ids == (kept,)


async def test_reads_are_the_customers_own_newest_first_bounded_and_one_dimension(
    session: AsyncSession,
) -> None:
    episode = await _customer(session, "cu1")
    other = await _customer(session, "cu2")
    ids = [await _message(session, "cu1", episode, f"line {i}") for i in range(4)]
    theirs = await _message(session, "cu2", other, "not hers")
    await embeddings.store_vectors(
        session,
        [_new("message", ids[0], [1, 0, 0], "cu1")]  # another width: a model name reused
        + [_new("message", i, [float(n + 1), 1.0], "cu1") for n, i in enumerate(ids[1:])]
        + [_new("message", theirs, [1, 0], "cu2")],
    )
    vectors = await embeddings.customer_vectors(session, "cu1", MODEL)
    assert vectors.subject_ids == (ids[3], ids[2], ids[1])
    assert vectors.matrix.shape == (3, 2)
    np.testing.assert_allclose(np.linalg.norm(vectors.matrix, axis=1), 1.0, rtol=1e-6)
    bounded = await embeddings.customer_vectors(session, "cu1", MODEL, limit=2)
    assert bounded.subject_ids == (ids[3], ids[2])
    assert len(await embeddings.customer_vectors(session, "cu1", "other-model")) == 0
    assert len(await embeddings.customer_vectors(session, "nobody", MODEL)) == 0


async def test_an_erased_customers_vectors_go_with_the_erasure(session: AsyncSession) -> None:
    episode = await _customer(session, "cu1")
    other = await _customer(session, "cu2")
    mine = await _message(session, "cu1", episode, "mine")
    theirs = await _message(session, "cu2", other, "theirs")
    await embeddings.store_vectors(
        session, [_new("message", mine, [1, 0], "cu1"), _new("message", theirs, [0, 1], "cu2")]
    )
    await erasure.lock_customers(session, ["cu1"])
    await erasure.erase_customers(session, await erasure.customer_keys(session, ["cu1"]))
    assert await _count(session) == 1
    assert len(await embeddings.customer_vectors(session, "cu1", MODEL)) == 0
    assert (await embeddings.customer_vectors(session, "cu2", MODEL)).subject_ids == (theirs,)


def _document(tenant: str, *texts: str) -> NewDocument:
    parsed = ParsedDocument(
        "Returns", tuple(Chunk(i, ("Returns", f"part {i}"), text) for i, text in enumerate(texts))
    )
    return NewDocument(
        tenant=tenant,
        parsed=parsed,
        format="markdown",
        audience=Audience.PUBLIC,
        content_hash="h-" + "-".join(texts),
        updated_at=AT,
        source_url=f"https://{tenant}.example.com/returns",
    )


async def test_knowledge_chunks_pending_then_read_by_tenant_and_gone_when_replaced(
    session: AsyncSession,
) -> None:
    floor = await _last_id(session, KnowledgeChunk.id)
    stored = await knowledge.store_document(session, _document("t1", "30 days", "free"), now=AT)
    await knowledge.store_document(session, _document("t2", "other shop"), now=AT)
    pending = await embeddings.pending_chunks(session, MODEL, after=floor, limit=10)
    assert [(p.tenant, p.text) for p in pending] == [
        ("t1", "Returns\npart 0\n30 days"),
        ("t1", "Returns\npart 1\nfree"),
        ("t2", "Returns\npart 0\nother shop"),
    ]
    await embeddings.store_vectors(
        session,
        [
            NewVector("knowledge_chunk", p.subject_id, p.tenant, None, MODEL, _vector([1, n]), 2)
            for n, p in enumerate(pending)
        ],
    )
    assert await embeddings.pending_chunks(session, MODEL, after=floor, limit=10) == []
    first = await embeddings.knowledge_vectors(session, "t1", MODEL)
    assert first.subject_ids == (pending[1].subject_id, pending[0].subject_id)
    assert first.matrix.shape == (2, 2)

    # The document changes: its chunks are written again, their old vectors go with them.
    await knowledge.store_document(
        session, _document("t1", "60 days"), document_id=stored.document.id, now=AT
    )
    assert len(await embeddings.knowledge_vectors(session, "t1", MODEL)) == 0
    assert len(await embeddings.knowledge_vectors(session, "t2", MODEL)) == 1
    again = await embeddings.pending_chunks(session, MODEL, after=floor, limit=10)
    assert [p.text for p in again] == ["Returns\npart 0\n60 days"]


async def test_deleting_a_subject_directly_deletes_its_vector(session: AsyncSession) -> None:
    floor = await _last_id(session, KnowledgeChunk.id)
    stored = await knowledge.store_document(session, _document("t1", "30 days"), now=AT)
    [chunk] = await embeddings.pending_chunks(session, MODEL, after=floor, limit=10)
    await embeddings.store_vectors(
        session,
        [NewVector("knowledge_chunk", chunk.subject_id, "t1", None, MODEL, _vector([1]), 1)],
    )
    assert await _count(session) == 1
    await knowledge.delete_document(session, "t1", stored.document.id)
    assert await _count(session) == 0


async def test_one_process_at_a_time_embeds_on_postgresql(database: DatabaseUnderTest) -> None:
    first, second = database.engine(), database.engine()
    try:
        async with embeddings.sole_embedder(first) as mine:
            assert mine
            async with embeddings.sole_embedder(second) as theirs:
                # SQLite serves one process: there it is always this one.
                assert theirs is (database.backend == "sqlite")
        async with embeddings.sole_embedder(second) as theirs:
            assert theirs
    finally:
        await first.dispose()
        await second.dispose()


async def test_the_embedder_and_the_knowledge_syncer_hold_locks_of_their_own(
    database: DatabaseUnderTest,
) -> None:
    first, second = database.engine(), database.engine()
    try:
        async with embeddings.sole_embedder(first) as embedding:
            async with knowledge_sync.sole_syncer(second) as syncing:
                assert embedding and syncing  # one kind of work never waits on the other
            async with knowledge_sync.sole_syncer(first) as again:
                assert again  # the syncer's lock was let go
    finally:
        await first.dispose()
        await second.dispose()
