"""The rows ``relaydesk bench embeddings`` embeds and reads (`devtools.bench.embeddings_bench`):
the synthetic support chats of `devtools.bench.history` over a few customers, help-center
chunks made of their answers, distinct customer messages to embed as a reply would, and random
unit vectors for the customers whose stored vectors are read."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Final

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from devtools.bench.history import SyntheticHistory, count_tokens, make_history
from devtools.bench.populate import populate
from gateway.knowledge.records import Chunk, ParsedDocument
from gateway.storage.models import Message
from gateway.storage.models_knowledge import KnowledgeChunk
from gateway.storage.repositories import embeddings, knowledge
from gateway.storage.repositories.embeddings import NewVector
from gateway.storage.repositories.knowledge import NewDocument
from gateway.tenant_ref import DEFAULT_TENANT_ENCODED
from gateway.tenants import TenantSettings
from identity.audience import Audience

CUSTOMERS: Final = 4
CHUNKS_PER_DOCUMENT: Final = 10


def history_sizes(total: int, customers: int = CUSTOMERS) -> list[int]:
    """``total`` messages over ``customers`` histories of distinct sizes (stored messages are
    named after their history's size)."""
    base = (total - customers * (customers - 1) // 2) // customers
    sizes = [base + index for index in range(customers)]
    sizes[-1] += total - sum(sizes)
    return sizes


def query_texts(count: int) -> list[str]:
    """``count`` distinct customer messages of the synthetic chats."""
    texts: dict[str, None] = {}
    seed = 0
    while len(texts) < count:
        seed += 1
        for episode in make_history(200, seed=seed).episodes:
            for message in episode.messages:
                if message.role == "user" and episode.channel != "phone":
                    texts.setdefault(message.text)
    return list(texts)[:count]


def chunk_documents(count: int) -> list[ParsedDocument]:
    """``count`` help-center chunks: the synthetic chats' answers, two or three to a chunk."""
    rng = random.Random(f"relaydesk-bench-chunks:{count}")
    answers = [
        message.text
        for episode in make_history(max(200, count * 6), seed=7).episodes
        for message in episode.messages
        if message.role == "assistant"
    ]
    chunks = [
        Chunk(
            position=index % CHUNKS_PER_DOCUMENT,
            headings=("Central de ajuda", f"Pergunta {index + 1}"),
            text=" ".join(rng.sample(answers, rng.randint(2, 3))),
        )
        for index in range(count)
    ]
    return [
        ParsedDocument(
            title=f"Central de ajuda {start // CHUNKS_PER_DOCUMENT + 1}",
            chunks=tuple(chunks[start : start + CHUNKS_PER_DOCUMENT]),
        )
        for start in range(0, count, CHUNKS_PER_DOCUMENT)
    ]


async def store_histories(
    sessions: async_sessionmaker[AsyncSession],
    histories: Sequence[SyntheticHistory],
    counter: TokenCounter,
) -> list[str]:
    """Store the histories; their customer ids."""
    settings = TenantSettings()
    ids = []
    for history in histories:
        seeded = await populate(
            sessions, history, count_tokens(history, counter), settings, counter
        )
        ids.append(seeded.identity.customer_id)
    return ids


async def store_chunks(sessions: async_sessionmaker[AsyncSession], count: int) -> int:
    """``count`` knowledge chunks of the default tenant; how many are stored."""
    async with sessions.begin() as session:
        for parsed in chunk_documents(count):
            await knowledge.store_document(
                session,
                NewDocument(
                    tenant=DEFAULT_TENANT_ENCODED,
                    parsed=parsed,
                    format="markdown",
                    audience=Audience.PUBLIC,
                    content_hash=hashlib.sha256(parsed.title.encode()).hexdigest(),
                ),
            )
        stored = await session.scalar(select(func.count()).select_from(KnowledgeChunk))
    return int(stored or 0)


async def store_random_vectors(
    sessions: async_sessionmaker[AsyncSession], customer_id: str, model: str, dimensions: int
) -> int:
    """A random unit vector for each of the customer's messages; how many were stored."""
    rng = np.random.default_rng(len(customer_id))
    async with sessions.begin() as session:
        rows = (
            await session.execute(
                select(Message.id, Message.tenant).where(Message.customer_id == customer_id)
            )
        ).all()
        matrix = rng.standard_normal((len(rows), dimensions)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors = [
            NewVector(
                kind="message",
                subject_id=message_id,
                tenant=tenant,
                customer_id=customer_id,
                model=model,
                vector=matrix[index].tobytes(),
                dimensions=dimensions,
            )
            for index, (message_id, tenant) in enumerate(rows)
        ]
        return await embeddings.store_vectors(session, vectors)
