"""Vectors beside their rows: what still needs one, storing them, and reading them back as a
matrix to rank.

Which rows need a vector is what recall and the knowledge base rank: a customer's user and
assistant messages that are not the gateway's canned notices and not transcribed voice notes
(a call's turns are, and `transcript` says so: they are masked before they are embedded, as
recall masks them), and every knowledge chunk. They are read oldest first, past a cursor, so
a caller walking forward never reads the whole table again for rows embedded long ago.

On PostgreSQL one process at a time embeds: `sole_embedder` is a session-level advisory lock
(per schema) held on a connection of its own while the process works through what is pending,
so two background processes never compute the same rows; it goes with the connection if the
process dies. SQLite serves one process. Storing is still ``INSERT ... ON CONFLICT DO
NOTHING`` on the one-vector-per-subject-and-model indexes, so a row is stored once whatever
happens. A subject deleted while its vector was computed (an erasure, a replaced document)
makes the batch's insert fail its foreign key; the batch is then stored again without the
rows that are gone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from sqlalchemy import exists, func, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import CANNED_KEY, SPEAKER_KEY, meta_text
from gateway.storage.models import EpisodeSummary, Message
from gateway.storage.models_embeddings import Embedding, SubjectKind
from gateway.storage.models_knowledge import KnowledgeChunk
from gateway.storage.repositories.bound_lists import values_in
from gateway.storage.repositories.sole_worker import sole_worker

__all__ = [
    "CALL_CHANNELS",
    "MAX_VECTORS",
    "NewVector",
    "PendingText",
    "StoredVectors",
    "customer_vectors",
    "knowledge_vectors",
    "pending_chunks",
    "pending_messages",
    "sole_embedder",
    "store_vectors",
]

# A call's turns are messages on these channels (`gateway.memory.recall.TRANSCRIPT_CHANNELS`).
CALL_CHANNELS: Final = ("phone",)
# The most vectors one read returns (the newest): 5,000 x 384 float32 is 7.5 MB.
MAX_VECTORS: Final = 5_000

Float32Matrix = npt.NDArray[np.float32]

# One lock per schema: deployments (and tests) sharing a database in several schemas do not
# wait on each other.


@dataclass(frozen=True, slots=True)
class PendingText:
    """A row without a vector for the model asked about, with what its vector is stored
    with."""

    kind: SubjectKind
    subject_id: int
    text: str
    tenant: str
    customer_id: str | None = None
    # A call's turn: masked for identifiers before it is embedded.
    transcript: bool = False


@dataclass(frozen=True, slots=True)
class NewVector:
    kind: SubjectKind
    subject_id: int
    tenant: str
    customer_id: str | None
    model: str
    # float32 bytes (`gateway.embeddings.vectors.to_float32`), ``dimensions`` x 4 long.
    vector: bytes
    dimensions: int


@dataclass(frozen=True, slots=True)
class StoredVectors:
    """Vectors of one model, one row of ``matrix`` (read-only, float32) per subject id, in
    ``subject_ids``' order."""

    subject_ids: tuple[int, ...]
    matrix: Float32Matrix

    @classmethod
    def empty(cls) -> StoredVectors:
        return cls((), np.zeros((0, 0), dtype=np.float32))

    def __len__(self) -> int:
        return len(self.subject_ids)


_SUBJECT_COLUMN: Final = {
    "message": Embedding.message_id,
    "knowledge_chunk": Embedding.chunk_id,
    "summary": Embedding.summary_id,
}
# The key of each kind's subject, in its own table.
_SUBJECT_TABLE: Final = {
    "message": Message.id,
    "knowledge_chunk": KnowledgeChunk.id,
    "summary": EpisodeSummary.id,
}


async def pending_messages(
    session: AsyncSession, model: str, *, after: int = 0, limit: int, skip: Collection[int] = ()
) -> list[PendingText]:
    """Up to ``limit`` messages past id ``after``, oldest first, that recall ranks and that
    have no vector of ``model``, but for the ids in ``skip``."""
    embedded = exists().where(Embedding.message_id == Message.id, Embedding.model == model)
    rows = await session.execute(
        select(
            Message.id,
            Message.customer_id,
            Message.tenant,
            Message.channel,
            Message.text,
            Message.role,
            meta_text(Message.extra, SPEAKER_KEY),
        )
        .where(
            Message.id > after,
            Message.role.in_(("user", "assistant")),
            # A media message without a caption: nothing to embed (recall skips it too).
            func.trim(Message.text) != "",
            or_(Message.transcript_confidence.is_(None), Message.channel.in_(CALL_CHANNELS)),
            meta_text(Message.extra, CANNED_KEY).is_(None),
            ~embedded,
            *_not_skipped(session, Message.id, skip),
        )
        .order_by(Message.id)
        .limit(limit)
    )
    return [
        PendingText(
            kind="message",
            subject_id=message_id,
            text=text if channel in CALL_CHANNELS else recall_line(speaker, role, text),
            tenant=tenant,
            customer_id=customer_id,
            transcript=channel in CALL_CHANNELS,
        )
        for message_id, customer_id, tenant, channel, text, role, speaker in rows
    ]


def recall_line(speaker: str | None, role: str, text: str) -> str:
    """A typed turn as recall shows it (``Customer: text``, whitespace collapsed): who said it
    is part of its meaning ("my sister's wedding"). A call is embedded as its transcript."""
    said = " ".join(text.split())
    if not said:
        return ""  # nothing to embed (recall skips it too)
    who = speaker or ("Customer" if role == "user" else "Assistant")
    return f"{who}: {said}"


async def pending_chunks(
    session: AsyncSession, model: str, *, after: int = 0, limit: int, skip: Collection[int] = ()
) -> list[PendingText]:
    """Up to ``limit`` knowledge chunks past id ``after``, oldest first, without a vector of
    ``model``, but for the ids in ``skip``; the text is the chunk's headings (outermost first)
    above its own text."""
    embedded = exists().where(Embedding.chunk_id == KnowledgeChunk.id, Embedding.model == model)
    rows = await session.execute(
        select(
            KnowledgeChunk.id, KnowledgeChunk.tenant, KnowledgeChunk.headings, KnowledgeChunk.text
        )
        .where(
            KnowledgeChunk.id > after,
            ~embedded,
            *_not_skipped(session, KnowledgeChunk.id, skip),
        )
        .order_by(KnowledgeChunk.id)
        .limit(limit)
    )
    return [
        PendingText(
            kind="knowledge_chunk",
            subject_id=chunk_id,
            text="\n".join([*(str(heading) for heading in headings or ()), text]),
            tenant=tenant,
        )
        for chunk_id, tenant, headings, text in rows
    ]


def _not_skipped(
    session: AsyncSession, column: Any, skip: Collection[int]
) -> list[ColumnElement[bool]]:
    return [~values_in(session, column, skip)] if skip else []


def _row(vector: NewVector, at: Any) -> dict[str, Any]:
    if len(vector.vector) != vector.dimensions * 4:
        raise ValueError(f"{len(vector.vector)} bytes for {vector.dimensions} float32 values")
    return {
        "kind": vector.kind,
        "message_id": vector.subject_id if vector.kind == "message" else None,
        "chunk_id": vector.subject_id if vector.kind == "knowledge_chunk" else None,
        "summary_id": vector.subject_id if vector.kind == "summary" else None,
        "customer_id": vector.customer_id,
        "tenant": vector.tenant,
        "model": vector.model,
        "dimensions": vector.dimensions,
        "vector": vector.vector,
        "created_at": at,
    }


def _insert(session: AsyncSession) -> Any:
    dialect = session.bind.dialect.name if session.bind is not None else ""
    make = pg_insert if dialect == "postgresql" else sqlite_insert
    # No conflict target: any of the three partial unique indexes may be the one hit.
    return make(Embedding).on_conflict_do_nothing().returning(Embedding.id)


async def store_vectors(session: AsyncSession, vectors: Sequence[NewVector]) -> int:
    """Store ``vectors`` (a vector already stored for its subject and model is kept); the
    number stored. Subjects deleted since they were read are skipped."""
    if not vectors:
        return 0
    at = utcnow()
    rows = [_row(vector, at) for vector in vectors]
    try:
        async with session.begin_nested():
            # The rows a conflict skipped return no id: what is counted was stored.
            return len((await session.execute(_insert(session), rows)).all())
    except IntegrityError:
        # A subject went (its foreign key failed): store what is still there.
        rows = [_row(vector, at) for vector in await _still_there(session, vectors)]
        if not rows:
            return 0
        return len((await session.execute(_insert(session), rows)).all())


async def _still_there(session: AsyncSession, vectors: Sequence[NewVector]) -> list[NewVector]:
    present: set[tuple[str, int]] = set()
    for kind, column in _SUBJECT_TABLE.items():
        wanted = [vector.subject_id for vector in vectors if vector.kind == kind]
        if wanted:
            found = await session.scalars(select(column).where(values_in(session, column, wanted)))
            present.update((kind, subject_id) for subject_id in found)
    return [vector for vector in vectors if (vector.kind, vector.subject_id) in present]


async def customer_vectors(
    session: AsyncSession,
    customer_id: str,
    model: str,
    *,
    kind: SubjectKind = "message",
    limit: int = MAX_VECTORS,
) -> StoredVectors:
    """The customer's newest ``limit`` vectors of ``model`` for subjects of ``kind``."""
    column = _SUBJECT_COLUMN[kind]
    rows = await session.execute(
        select(column, Embedding.dimensions, Embedding.vector)
        .where(
            Embedding.customer_id == customer_id,
            Embedding.model == model,
            column.is_not(None),
        )
        .order_by(column.desc())
        .limit(min(limit, MAX_VECTORS))
    )
    return _matrix(rows.all())


async def knowledge_vectors(
    session: AsyncSession, tenant: str, model: str, *, limit: int = MAX_VECTORS
) -> StoredVectors:
    """The tenant's newest ``limit`` knowledge chunk vectors of ``model``."""
    rows = await session.execute(
        select(Embedding.chunk_id, Embedding.dimensions, Embedding.vector)
        .where(
            Embedding.tenant == tenant,
            Embedding.model == model,
            Embedding.chunk_id.is_not(None),
        )
        .order_by(Embedding.chunk_id.desc())
        .limit(min(limit, MAX_VECTORS))
    )
    return _matrix(rows.all())


def _matrix(rows: Sequence[Any]) -> StoredVectors:
    """The rows (subject id, dimensions, bytes), newest first, as a matrix in the same order;
    a row of another dimension than the newest (a model name reused for another model) is
    left out rather than ranked against the wrong space."""
    if not rows:
        return StoredVectors.empty()
    dimensions = int(rows[0][1])
    kept = [(int(subject), bytes(packed)) for subject, size, packed in rows if size == dimensions]
    matrix = np.frombuffer(b"".join(packed for _, packed in kept), dtype=np.float32)
    return StoredVectors(
        subject_ids=tuple(subject for subject, _ in kept),
        matrix=matrix.reshape(len(kept), dimensions),
    )


def sole_embedder(engine: AsyncEngine) -> AbstractAsyncContextManager[bool]:
    """Whether this process is the one that embeds, for the block (`sole_worker`)."""
    return sole_worker(engine, "relaydesk.embeddings")
