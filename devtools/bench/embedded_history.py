"""``relaydesk bench reply --model-latency S --embedded-history``: the load's customers (and
the warm-up numbers, so the warm-up loads the model) arrive with a stored history whose vectors
are already computed, so every measured reply embeds its own message on the reply's path
(hybrid recall, `gateway.embeddings.similarity`).

Each customer gets a short history of the synthetic support chats (`devtools.bench.history`,
`HISTORY_MESSAGES` messages over a few episodes), every episode on WhatsApp under the number
the load sends from: recall offers an identity the raw turns of its own earlier episodes
whatever it may see of the others, so those turns, with their vectors, are recall's
candidates. The history is moved in time so its open episode is a minute old (`reply_seed.
recent`): the first message of the load continues it instead of closing it as idle.

The vectors are computed here, before any gateway starts, by a `BackgroundEmbedder` drained
over the bench database with the offline model, its cursors starting past the rows that were
there before (`start_after`): the seeded rows, and nothing else, are embedded. This is setup,
not a figure, so it uses every core at normal priority.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from context import TokenCounter
from devtools.bench.history import SyntheticHistory, count_tokens, make_history
from devtools.bench.populate import populate
from devtools.bench.reply_seed import recent
from gateway.embeddings.background import BackgroundEmbedder
from gateway.embeddings.offline import OfflineEmbedder
from gateway.runtime.clock import utcnow
from gateway.storage.models import Message
from gateway.storage.models_knowledge import KnowledgeChunk
from gateway.tenants import TenantSettings

__all__ = ["HISTORY_MESSAGES", "EmbeddedHistory", "seed_embedded_history"]

HISTORY_MESSAGES: Final = 16
# `populate` names the stored messages after the history's size: one size per customer.
SIZE_OFFSET: Final = 3_000_000
TELEGRAM_OFFSET: Final = 700_000_000
CHANNEL: Final = "whatsapp"


@dataclass(frozen=True, slots=True)
class EmbeddedHistory:
    """What was seeded and embedded before the load."""

    customer_ids: tuple[str, ...]
    messages: int
    vectors: int
    seconds: float  # the drain's

    @property
    def customers(self) -> int:
        return len(self.customer_ids)

    def line(self) -> str:
        return (
            f"history: {self.messages} messages of {self.customers} customers stored and "
            f"embedded before the load ({self.vectors} vectors in {self.seconds:.1f} s): every "
            "reply embeds its message for hybrid recall"
        )

    def figures(self) -> dict[str, float | int]:
        return {
            "customers": self.customers,
            "messages": self.messages,
            "vectors": self.vectors,
            "seconds": round(self.seconds, 2),
        }


NO_HISTORY_LINE: Final = "history: none (the customers of the load have no stored history)"


def whatsapp_history(phone: str, index: int) -> SyntheticHistory:
    """A short synthetic history of the customer at ``phone`` (E.164), every episode on
    WhatsApp; ``index`` keeps its names apart from the other customers'."""
    history = make_history(HISTORY_MESSAGES, seed=index + 1)
    episodes = tuple(
        replace(
            episode,
            channel=CHANNEL,
            messages=tuple(replace(message, confidence=None) for message in episode.messages),
        )
        for episode in history.episodes
    )
    return replace(
        history,
        size=SIZE_OFFSET + index,
        phone=phone,
        telegram_user=TELEGRAM_OFFSET + index,
        web_account=f"acct-load-{index}",
        episodes=episodes,
    )


async def _last_ids(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int]:
    async with sessions() as session:
        message = await session.scalar(select(func.max(Message.id)))
        chunk = await session.scalar(select(func.max(KnowledgeChunk.id)))
    return int(message or 0), int(chunk or 0)


async def seed_embedded_history(
    sessions: async_sessionmaker[AsyncSession], phones: Sequence[str], counter: TokenCounter
) -> EmbeddedHistory:
    """Store a history for each of ``phones`` and compute the vectors of its messages."""
    last_message, last_chunk = await _last_ids(sessions)
    settings = TenantSettings()
    now = utcnow()
    customer_ids = []
    for index, phone in enumerate(phones):
        history = recent(whatsapp_history(phone, index), now)
        seeded = await populate(
            sessions, history, count_tokens(history, counter), settings, counter
        )
        customer_ids.append(seeded.identity.customer_id)
    embedder = OfflineEmbedder(threads=os.cpu_count() or 1, niceness=0)
    try:
        loop = BackgroundEmbedder(
            sessions,
            embedder,
            start_after={"message": last_message, "knowledge_chunk": last_chunk},
        )
        burst = await loop.drain()
    finally:
        await embedder.close()
    return EmbeddedHistory(
        customer_ids=tuple(customer_ids),
        messages=len(phones) * HISTORY_MESSAGES,
        vectors=burst.rows,
        seconds=burst.seconds,
    )
