"""Send outcomes are written in groups: the outcomes that arrive together share one transaction,
each send still returns only once its outcome is committed, and an outcome that cannot be
written fails its own send only. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy import event, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.storage.models import OutboundMessage, TurnRow
from gateway.storage.repositories import turns
from gateway.storage.repositories.outbound import SentPart
from gateway.storage.updates import DeliveryOutcome
from gateway.turns.delivery_records import DeliveryRecords, SendOutcome
from tests.support.stored_conversations import store_episode

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


async def _turns(sessions: async_sessionmaker[AsyncSession], count: int) -> list[tuple[int, int]]:
    """(turn id, reply message id) of `count` answered turns."""
    lines = [("user", f"pergunta {i}") for i in range(count)]
    lines += [("assistant", f"resposta {i}") for i in range(count)]
    async with sessions.begin() as session:
        stored = await store_episode(session, lines, started_at=START)
        made = []
        for index in range(count):
            turn = await turns.create_turn(
                session,
                inbound_message_id=stored.message_ids[index],
                customer_id=stored.customer_id,
                episode_id=stored.episode_id,
                conversation_key=f"whatsapp:+5511{index}",
            )
            made.append((turn.id, stored.message_ids[count + index]))
    return made


def _sent(turn_id: int, reply_id: int, attempts: int = 1) -> SendOutcome:
    parts = (SentPart("whatsapp", f"SM{turn_id}", turn_id, reply_id, 0),)
    return SendOutcome(turn_id, DeliveryOutcome("sent", attempts), parts)


async def test_outcomes_arriving_together_share_one_transaction(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    made = await _turns(sessions, 6)
    engine = sessions.kw["bind"].sync_engine
    begun: list[int] = []

    def count(connection: object) -> None:
        begun.append(1)

    records = DeliveryRecords(sessions)
    event.listen(engine, "begin", count)
    try:
        await asyncio.gather(*(records.record(_sent(t, r)) for t, r in made))
    finally:
        event.remove(engine, "begin", count)
    assert len(begun) == 1

    async with sessions() as session:
        rows = (
            await session.scalars(select(TurnRow).where(TurnRow.id.in_([t for t, _ in made])))
        ).all()
        sent = (await session.scalars(select(OutboundMessage))).all()
    assert {row.id: (row.delivery_status, row.delivery_attempts) for row in rows} == {
        t: ("sent", 1) for t, _ in made
    }
    assert {(row.provider_message_id, row.turn_id, row.reply_message_id) for row in sent} >= {
        (f"SM{t}", t, r) for t, r in made
    }

    # One at a time, nothing waits for a group: each write is its own.
    await records.record(_sent(made[0][0], made[0][1], attempts=2))
    async with sessions() as session:
        first = await session.get(TurnRow, made[0][0])
    assert first is not None and first.delivery_attempts == 2
    await records.close()


async def test_an_outcome_that_cannot_be_written_fails_only_its_own_send(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    made = await _turns(sessions, 3)
    records = DeliveryRecords(sessions)
    # A part without its provider id (NOT NULL): refused, with the turn's own columns.
    bad_part = SentPart("whatsapp", None, made[1][0], made[1][1], 0)  # type: ignore[arg-type]
    bad = SendOutcome(made[1][0], DeliveryOutcome("sent", 1), (bad_part,))
    outcomes = await asyncio.gather(
        records.record(_sent(*made[0])),
        records.record(bad),
        records.record(_sent(*made[2])),
        return_exceptions=True,
    )
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], IntegrityError)
    async with sessions() as session:
        good = [await session.get(TurnRow, made[i][0]) for i in (0, 2)]
        refused = await session.get(TurnRow, made[1][0])
    assert [row.delivery_status for row in good if row is not None] == ["sent", "sent"]
    assert refused is not None and refused.conversation_key == "whatsapp:+55111"
    assert refused.delivery_status is None
    await records.close()
