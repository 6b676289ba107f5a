"""The event sender against a real receiver, on SQLite and PostgreSQL: signed envelopes, at
most one delivery per event, retries with backoff, refusals and retention."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.events.outbox import EventOutbox
from gateway.events.sender import MAX_DELAY_S, retry_delay_s
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.repositories import outbound_events
from tests.gateway.events.conftest import MakeSender, record, settled, states
from tests.support.databases import DatabaseUnderTest
from tests.support.events import SECRET, EventReceiver, until


class Boom(Exception):
    pass


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_committed_event_arrives_once_signed_and_a_rolled_back_one_never(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    metrics = Metrics.create()
    # A long poll: the first event can only arrive this soon through the commit's wake-up.
    sender = make_sender(metrics=metrics, poll_s=30.0)
    outbox.wake = sender.wake
    sender.start()

    await record(clean_sessions, outbox, "conversation.waiting", {"conversation_id": "c1"})
    await receiver.wait_for(1)
    with pytest.raises(Boom):
        async with clean_sessions() as session:
            async with session.begin():
                await outbox.record(session, "message.created", {"text": "never"})
                raise Boom
    await record(clean_sessions, outbox, "conversation.owner_changed", {"owner": "operator"})
    await receiver.wait_for(2)

    first, second = receiver.requests
    assert [r.json()["type"] for r in receiver.requests] == [
        "conversation.waiting",
        "conversation.owner_changed",
    ]
    for request in receiver.requests:
        assert request.signed_by(SECRET)
        assert not request.signed_by(b"another-secret-0123456789")
        assert request.headers["Content-Type"] == "application/json"
        assert request.headers["X-Relaydesk-Event"] == request.json()["type"]
        assert request.headers["X-Relaydesk-Delivery"] == request.json()["id"]
        assert int(request.headers["X-Relaydesk-Timestamp"]) > 0
        datetime.fromisoformat(request.json()["created_at"].replace("Z", "+00:00"))
    assert first.json()["data"] == {"conversation_id": "c1"}
    assert second.json()["data"] == {"owner": "operator"}
    assert first.delivery != second.delivery

    await settled(clean_sessions, 2)
    rows = await states(clean_sessions)
    assert len(rows) == 2  # the rolled-back event was never stored
    assert all(row.delivered_at is not None and row.attempts == 1 for row in rows)
    assert [str(row.id) for row in rows] == [first.delivery, second.delivery]
    assert sample(metrics, "relaydesk_events_sent_total") == 2
    assert await sender.refresh_pending() == 0


async def test_a_receiver_that_is_down_gets_the_event_once_when_it_is_back(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    metrics = Metrics.create()
    sender = make_sender(metrics=metrics)
    receiver.answer(500, times=2)
    await record(clean_sessions, outbox, "message.created", {"text": "hello"})
    sender.start()

    await receiver.wait_for(2, delivered=False)  # both answered 500
    await receiver.stop()

    async def refused_too() -> bool:
        rows = await states(clean_sessions)
        return rows[0].attempts >= 4 and "Connect" in (rows[0].last_error or "")

    await until(refused_too)
    [row] = await states(clean_sessions)
    assert row.delivered_at is None and not row.given_up  # backing off

    await receiver.start()
    await receiver.wait_for(1)
    await settled(clean_sessions, 1)
    await sender.send_due()
    assert len(receiver.delivered()) == 1
    assert {r.delivery for r in receiver.requests} == {str(row.id)}
    assert all(r.signed_by(SECRET) for r in receiver.requests)
    [row] = await states(clean_sessions)
    assert row.delivered_at is not None
    failed = "relaydesk_events_failed_attempts_total"
    assert sample(metrics, failed, reason="status") == 2
    assert sample(metrics, failed, reason="network") >= 2


def test_the_backoff_doubles_with_jitter_up_to_its_cap() -> None:
    rng = random.Random(7)
    for attempts, base in [(1, 2.0), (2, 4.0), (3, 8.0), (5, 32.0), (9, 512.0)]:
        delay = retry_delay_s(attempts, None, rng=rng)
        assert base * 0.8 <= delay <= base * 1.2
    assert retry_delay_s(30, None, rng=rng) <= MAX_DELAY_S * 1.2
    assert retry_delay_s(1, 90.0, rng=rng) == 90.0  # Retry-After, as the receiver said
    assert retry_delay_s(1, 0.0, rng=rng) == 2.0  # never sooner than the first backoff


async def test_retry_after_is_honoured(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    sender = make_sender()
    receiver.answer(429, **{"Retry-After": "1"})
    await record(clean_sessions, outbox, "message.created", {"text": "later"})
    sender.start()

    await receiver.wait_for(1)
    await settled(clean_sessions, 1)
    throttled, delivered = receiver.requests
    assert throttled.status == 429
    # Not sooner than the receiver asked (a claim takes only events whose time has come).
    assert delivered.at - throttled.at >= timedelta(seconds=1)
    [row] = await states(clean_sessions)
    assert row.delivered_at is not None and row.attempts == 2


async def test_a_refused_event_is_not_retried_and_holds_no_other(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    metrics = Metrics.create()
    sender = make_sender(metrics=metrics)
    receiver.answer(400)
    await record(clean_sessions, outbox, "message.created", {"n": 1})
    await record(clean_sessions, outbox, "message.created", {"n": 2})
    sender.start()

    await receiver.wait_for(1)
    await settled(clean_sessions, 2)
    await sender.send_due()
    refused, delivered = receiver.requests
    assert refused.status == 400 and refused.json()["data"] == {"n": 1}
    assert delivered.json()["data"] == {"n": 2}
    first, second = await states(clean_sessions)
    assert first.given_up and first.attempts == 1 and first.delivered_at is None
    assert "HTTP 400" in (first.last_error or "")
    assert second.delivered_at is not None
    assert sample(metrics, "relaydesk_events_given_up_total") == 1
    assert await sender.refresh_pending() == 0


async def test_an_event_failing_every_time_is_given_up_after_max_attempts(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    sender = make_sender(max_attempts=3)
    receiver.answer(503, times=100)
    await record(clean_sessions, outbox, "message.created", {"text": "doomed"})
    sender.start()

    async def given_up() -> bool:
        return (await states(clean_sessions))[0].given_up

    await until(given_up)
    await sender.send_due()
    assert len(receiver.requests) == 3
    [row] = await states(clean_sessions)
    assert row.attempts == 3 and "given up after 3 attempts" in (row.last_error or "")


async def test_a_failing_event_does_not_stop_later_ones(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    sender = make_sender(base_delay_s=30.0)  # the failed one is not due again in this test
    receiver.answer(500)
    for n in range(3):
        await record(clean_sessions, outbox, "message.created", {"n": n})

    await sender.send_due()
    assert [r.json()["data"]["n"] for r in receiver.requests] == [0, 1, 2]
    failed, *rest = await states(clean_sessions)
    assert failed.delivered_at is None and not failed.given_up and failed.attempts == 1
    assert all(row.delivered_at is not None for row in rest)


async def test_a_receiver_that_is_down_pauses_the_sender_and_keeps_the_order(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
    receiver: EventReceiver,
) -> None:
    outbox = EventOutbox(enabled=True)
    sender = make_sender(base_delay_s=0.2)
    receiver.answer(500, times=4)
    for n in range(5):
        await record(clean_sessions, outbox, "message.created", {"n": n})
    sender.start()

    await receiver.wait_for(5)
    await settled(clean_sessions, 5)
    # While it fails only the first two are tried, and they go first once it is back.
    failing = {r.json()["data"]["n"] for r in receiver.requests if r.status == 500}
    assert failing == {0, 1}
    assert [r.json()["data"]["n"] for r in receiver.delivered()] == [0, 1, 2, 3, 4]


async def test_two_senders_never_deliver_one_event_twice(
    database: DatabaseUnderTest,
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
) -> None:
    receiver = EventReceiver(delay_s=0.002)
    await receiver.start()
    outbox = EventOutbox(enabled=True)
    for n in range(120):
        await record(clean_sessions, outbox, "message.created", {"n": n})
    # Each with its own engine and client, as two background processes would be.
    engine = database.engine()
    other_sessions = async_sessionmaker(engine, expire_on_commit=False)
    async with httpx.AsyncClient() as other_http:
        senders = [
            make_sender(url=receiver.url, batch=5),
            make_sender(url=receiver.url, batch=5, sessions=other_sessions, http=other_http),
        ]
        try:
            for sender in senders:
                sender.start()
            await receiver.wait_for(120, timeout=60.0)
            await settled(clean_sessions, 120)
            for sender in senders:
                await sender.close()
                await sender.send_due()
        finally:
            await receiver.stop()
            for sender in senders:
                await sender.close()
            await engine.dispose()

    deliveries = [r.delivery for r in receiver.requests]
    twice = sorted({d for d in deliveries if deliveries.count(d) > 1})
    assert twice == []
    assert len(set(deliveries)) == 120
    assert all(row.delivered_at is not None for row in await states(clean_sessions))


async def test_old_delivered_and_given_up_events_are_deleted(
    clean_sessions: async_sessionmaker[AsyncSession],
    make_sender: MakeSender,
) -> None:
    outbox = EventOutbox(enabled=True)
    for n in range(4):
        await record(clean_sessions, outbox, "message.created", {"n": n})
    delivered, given_up, waiting, due = await states(clean_sessions)
    async with clean_sessions.begin() as session:
        await outbound_events.mark_delivered(session, delivered.id, now=utcnow())
        await outbound_events.give_up(session, given_up.id, error="HTTP 410")
        await outbound_events.retry_later(
            session, waiting.id, at=utcnow() + timedelta(hours=1), error="HTTP 500"
        )
    sender = make_sender()
    assert await sender.purge() == 0  # none is old enough yet
    assert await sender.refresh_pending() == 2
    assert await sender.purge(now=utcnow() + timedelta(days=8)) == 1
    assert await sender.purge(now=utcnow() + timedelta(days=31)) == 1
    assert [row.id for row in await states(clean_sessions)] == [waiting.id, due.id]
