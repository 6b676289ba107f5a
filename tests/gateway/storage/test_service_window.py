"""The window's rows: `last_inbound_at` kept by the conversation upsert (customer messages only,
forward only, one statement for a lot), `window_closed_at` forward only, a free-form reply
queued again once, held replies counted until the customer writes again."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import event, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation, TurnRow
from gateway.storage.records import ConversationRecord, NewMessage
from gateway.storage.repositories import (
    conversations,
    customers,
    episodes,
    messages,
    service_window,
    turns,
)
from gateway.storage.repositories.conversations import MessageSeen
from gateway.storage.repositories.outbound import SentPart
from gateway.storage.updates import DeliveryOutcome
from gateway.turns.delivery import apply_status
from gateway.turns.delivery_records import DeliveryRecords, SendOutcome

NOW = utcnow()


def _seen(customer_id: str, at_minutes: int, *, inbound: bool) -> MessageSeen:
    return MessageSeen(
        f"{customer_id}:whatsapp",
        customer_id,
        "whatsapp",
        None,
        "+5511998765432",
        NOW + timedelta(minutes=at_minutes),
        inbound=inbound,
    )


async def _conversation(session: AsyncSession, customer_id: str) -> ConversationRecord:
    found = await conversations.by_key(session, f"{customer_id}:whatsapp")
    assert found is not None
    return found


async def test_last_inbound_at_follows_customer_messages_only_and_only_forward(
    session: AsyncSession,
) -> None:
    customer = await customers.create_customer(session)
    first = await conversations.note_messages(session, [_seen(customer.id, 0, inbound=True)])
    assert first[f"{customer.id}:whatsapp"].last_inbound_at == NOW
    # Our own (an operator's) later message moves last_message_at, not last_inbound_at.
    await conversations.note_messages(session, [_seen(customer.id, 5, inbound=False)])
    noted = await _conversation(session, customer.id)
    assert noted.last_message_at == NOW + timedelta(minutes=5)
    assert noted.last_inbound_at == NOW
    # A lot: the latest customer message wins; an older one arriving late changes nothing.
    await conversations.note_messages(
        session,
        [
            _seen(customer.id, 10, inbound=True),
            _seen(customer.id, 12, inbound=True),
            _seen(customer.id, 15, inbound=False),
        ],
    )
    await conversations.note_messages(session, [_seen(customer.id, 1, inbound=True)])
    noted = await _conversation(session, customer.id)
    assert noted.last_inbound_at == NOW + timedelta(minutes=12)
    assert noted.last_message_at == NOW + timedelta(minutes=15)


async def test_a_lot_of_conversations_is_noted_in_one_statement(session: AsyncSession) -> None:
    # Four: a power of two, one chunk (`in_bounded_shapes`).
    people = [await customers.create_customer(session) for _ in range(4)]
    statements: list[str] = []

    def count(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        statements.append(statement)

    sync_engine = session.bind.sync_engine if session.bind is not None else None
    assert sync_engine is not None
    event.listen(sync_engine, "before_cursor_execute", count)
    try:
        noted = await conversations.note_messages(
            session, [_seen(p.id, i, inbound=True) for i, p in enumerate(people)]
        )
    finally:
        event.remove(sync_engine, "before_cursor_execute", count)
    assert len(statements) == 1
    assert [noted[f"{p.id}:whatsapp"].last_inbound_at for p in people] == [
        NOW + timedelta(minutes=i) for i in range(4)
    ]


async def test_the_provider_closing_the_window_only_moves_forward(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    await conversations.note_messages(session, [_seen(customer.id, 0, inbound=True)])
    key = f"{customer.id}:whatsapp"
    await service_window.close_window(session, key, NOW + timedelta(minutes=30))
    await service_window.close_window(session, key, NOW + timedelta(minutes=10))
    assert (await _conversation(session, customer.id)).window_closed_at == NOW + timedelta(
        minutes=30
    )


async def _answered_turn(session: AsyncSession, customer_id: str) -> int:
    episode = await episodes.open_episode(session, customer_id=customer_id, channel="whatsapp")
    inbound = await messages.append_message(
        session,
        NewMessage(
            customer_id=customer_id,
            episode_id=episode.id,
            channel="whatsapp",
            role="user",
            text="oi",
            token_count=1,
            provider_message_id=f"SM{customer_id}",
        ),
    )
    turn = await turns.create_turn(
        session,
        inbound_message_id=inbound.id,
        customer_id=customer_id,
        episode_id=episode.id,
        conversation_key=f"{customer_id}:whatsapp",
    )
    return turn.id


async def _delivery(session: AsyncSession, turn_id: int) -> str | None:
    return await session.scalar(select(TurnRow.delivery_status).where(TurnRow.id == turn_id))


async def test_a_free_form_reply_is_queued_again_once(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    turn_id = await _answered_turn(session, customer.id)
    await session.execute(
        update(TurnRow).where(TurnRow.id == turn_id).values(delivery_status="sent")
    )
    assert await service_window.send_again_as_template(session, turn_id, "outside (63016)")
    assert await _delivery(session, turn_id) == "retry"
    assert not await service_window.send_again_as_template(session, turn_id, "again")
    # Sent as the template, it is never queued again.
    await session.execute(
        update(TurnRow).where(TurnRow.id == turn_id).values(delivery_status="template")
    )
    assert not await service_window.send_again_as_template(session, turn_id, "again")
    assert await _delivery(session, turn_id) == "template"


async def test_held_replies_count_until_the_customer_writes_again(session: AsyncSession) -> None:
    customer = await customers.create_customer(session)
    await conversations.note_messages(session, [_seen(customer.id, -60, inbound=True)])
    turn_id = await _answered_turn(session, customer.id)
    await session.execute(
        update(TurnRow)
        .where(TurnRow.id == turn_id)
        .values(delivery_status="held", error="outside the window", updated_at=NOW)
    )
    conversation = await _conversation(session, customer.id)
    counts = await service_window.held_since_last_inbound(session, [conversation])
    assert counts == {conversation.id: 1}
    await conversations.note_messages(session, [_seen(customer.id, 1, inbound=True)])
    conversation = await _conversation(session, customer.id)
    assert await service_window.held_since_last_inbound(session, [conversation]) == {}


async def test_a_merge_keeps_the_latest_customer_message_time(session: AsyncSession) -> None:
    kept, moved = [await customers.create_customer(session) for _ in range(2)]
    await conversations.note_messages(session, [_seen(kept.id, 0, inbound=True)])
    await conversations.note_messages(session, [_seen(moved.id, 20, inbound=True)])
    gone = await _conversation(session, moved.id)
    await conversations.move_conversations(session, [gone.id], kept.id)
    assert (await _conversation(session, kept.id)).last_inbound_at == NOW + timedelta(minutes=20)
    rows = await session.scalars(select(Conversation.id).where(Conversation.id == gone.id))
    assert rows.first() is None


async def test_a_refusal_reported_before_the_send_was_recorded_is_applied_when_it_is(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions.begin() as session:
        customer = await customers.create_customer(session)
        await conversations.note_messages(session, [_seen(customer.id, 0, inbound=True)])
        turn_id = await _answered_turn(session, customer.id)
        sid = f"SM{customer.id}reply"
        # Twilio's callback gets in first: the message failed, outside the window.
        assert await apply_status(
            session, channel="whatsapp", provider_id=sid, status="failed", error_code="63016"
        )
    records = DeliveryRecords(sessions)
    await records.record(
        SendOutcome(
            turn_id,
            DeliveryOutcome("sent", 1),
            (SentPart("whatsapp", sid, turn_id, None, 0),),
        )
    )
    await records.close()
    async with sessions() as session:
        # Queued once to go again (as the template, or held), the window closed.
        assert await _delivery(session, turn_id) == "retry"
        assert (await _conversation(session, customer.id)).window_closed_at is not None
