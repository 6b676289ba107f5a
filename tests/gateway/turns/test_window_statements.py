"""What assembling a window costs in statements: the customer's episodes (the current one
picked among them), their recent summaries, the current episode's turns and the facts; recall's
raw turns only when its cache has nothing for the customer. Each read is bounded by the window,
not by the history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession

from context import TiktokenCounter, load_encoding
from gateway.customers.resolve import ResolvedIdentity, resolve_identity
from gateway.memory.recall import RecallCache
from gateway.runtime.clock import utcnow
from gateway.storage.records import NewFact, NewMessage
from gateway.storage.repositories import episodes, facts, messages, summaries
from gateway.tenants import TenantSettings
from gateway.turns.window import assemble_context
from identity import WhatsAppSender, observe

COUNTER = TiktokenCounter(load_encoding())


@contextmanager
def recorded(session: AsyncSession) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(" ".join(str(args[2]).split()))

    sync_engine = session.bind.sync_engine if session.bind is not None else None
    assert sync_engine is not None
    event.listen(sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(sync_engine, "before_cursor_execute", record)


async def _say(session: AsyncSession, owner: ResolvedIdentity, episode_id: str, text: str) -> int:
    stored = await messages.append_message(
        session,
        NewMessage(
            owner.customer_id,
            episode_id,
            "whatsapp",
            "user",
            text,
            COUNTER.count(text),
            owner.identity_id,
        ),
    )
    return stored.id


async def _customer(session: AsyncSession) -> ResolvedIdentity:
    """Two closed episodes with summaries, an older open one of the same channel and the
    current open one (the latest message), a fact."""
    owner = await resolve_identity(session, observe(WhatsAppSender("whatsapp:+5511998765432")))
    for index in range(2):
        old = await episodes.open_episode(session, customer_id=owner.customer_id, channel="webchat")
        said = await _say(session, owner, old.id, f"o pedido {index} chegou quebrado")
        await summaries.save_summary(
            session,
            customer_id=owner.customer_id,
            episode_id=old.id,
            summary=f"Pedido {index} chegou quebrado.",
            last_message_id=said,
            origin_channel="webchat",
            token_count=8,
        )
    stale = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="whatsapp", identity_id=owner.identity_id
    )
    await _say(session, owner, stale.id, "STALE-OPEN-EPISODE")
    current = await episodes.open_episode(
        session, customer_id=owner.customer_id, channel="whatsapp", identity_id=owner.identity_id
    )
    said = await _say(session, owner, current.id, "CURRENT-EPISODE quero trocar o pedido")
    await episodes.touch_episode(session, current.id, utcnow() + timedelta(minutes=1))
    await facts.record_fact(
        session, owner.customer_id, NewFact("first_name", "Ana", "profile", said)
    )
    return owner


async def test_a_window_reads_four_statements_and_recall_one_more_when_cold(
    session: AsyncSession,
) -> None:
    owner = await _customer(session)
    cache = RecallCache()

    async def assemble() -> str:
        assembled = await assemble_context(
            session,
            identity=owner,
            settings=TenantSettings(),
            counter=COUNTER,
            message="e o pedido quebrado?",
            recall_cache=cache,
        )
        return "\n".join(m.content for m in assembled.window.messages)

    with recorded(session) as cold:
        first = await assemble()
    with recorded(session) as warm:
        second = await assemble()
    assert first == second
    assert "CURRENT-EPISODE" in first and "STALE-OPEN-EPISODE" not in first
    tables = [statement.split(" FROM ")[1].split()[0] for statement in warm]
    assert sorted(tables) == ["episode_summaries", "episodes", "facts", "messages"]
    assert len(cold) == len(warm) + 1  # recall's raw turns, then kept by the cache
