"""The webhook inbox: a 200 means the message is committed (group-committed with the others of
the moment); it is stored as a message in the background, each sender's messages in the order
they were acknowledged, once, also when two processes share the work or one dies holding it; a
claim is stored in one transaction, and a message that cannot be stored holds back only its
sender's later ones."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import event, func, select

from channels.base import InboundMessage
from gateway.inbox.processor import MAX_ATTEMPTS
from gateway.inbox.writer import InboxWriter
from gateway.keys import ENGINE, INBOX, INBOX_WRITER, SCHEDULER, SESSIONS
from gateway.runtime.clock import utcnow
from gateway.storage.engine import make_engine, make_sessionmaker
from gateway.storage.models import InboxMessage, Message
from gateway.storage.repositories import inbox
from gateway.tenant_ref import DEFAULT_TENANT
from tests.support.databases import create_database, drop_database, postgres_reachable, unavailable
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import Stack, running_stack

TOKEN = "twilio-auth-token-for-tests"
ACCOUNT = "AC" + "c" * 32
BOT = "whatsapp:+14155238886"
PUBLIC_URL = "https://relay.example.org"
PATH = "/webhooks/twilio/whatsapp"
SETTINGS = {
    "TWILIO_ACCOUNT_SID": ACCOUNT,
    "TWILIO_AUTH_TOKEN": TOKEN,
    "TWILIO_WHATSAPP_FROM": BOT,
    "RELAYDESK_PUBLIC_URL": PUBLIC_URL,
}
BACKENDS = ["embedded", "production"]


def _params(sid: str, sender: str, text: str) -> dict[str, str]:
    return inbound_params(sid, sender, text, account=ACCOUNT)


async def _post(stack: Stack, params: dict[str, str]) -> int:
    response = await post_signed(stack.client, params, token=TOKEN, public_url=PUBLIC_URL)
    return int(response.status)


async def _count(stack: Stack, model: type[Message] | type[InboxMessage]) -> int:
    async with stack.sessions()() as session:
        query = select(func.count()).select_from(model)
        if model is Message:
            query = query.where(Message.role == "user")
        return int(await session.scalar(query) or 0)


@asynccontextmanager
async def _held(stack: Stack) -> AsyncIterator[None]:
    """Stand-ins for acknowledgements in progress: background work yields meanwhile."""
    backpressure = stack.backpressure
    backpressure.max_wait_s = 30.0
    backpressure.ingesting += backpressure.backlog
    try:
        yield
    finally:
        backpressure.ingesting -= backpressure.backlog


_INSERTS = ("INSERT INTO messages", "INSERT INTO turns")
_USER_SIDS = select(Message.provider_message_id).where(Message.role == "user").order_by(Message.id)


def _sender() -> str:
    return f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_acknowledged_means_committed_then_stored_once_in_the_background(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        senders = [_sender() for _ in range(5)]
        sent = [_params("SM" + uuid.uuid4().hex, senders[i % 5], f"pedido {i}") for i in range(60)]
        async with _held(stack):
            statuses = await asyncio.gather(*(_post(stack, p) for p in sent))
            # Twilio's retries of the first ten while they wait: nothing added.
            statuses += await asyncio.gather(*(_post(stack, p) for p in sent[:10]))
            assert set(statuses) == {200}
            assert await _count(stack, InboxMessage) == 60  # durable before the 200
            assert await _count(stack, Message) == 0  # not stored yet: processing yields
        # Concurrent webhooks share commits.
        assert stack.app[INBOX_WRITER].commits < 70
        await stack.stored()
        assert await _count(stack, InboxMessage) == 0
        async with stack.sessions()() as session:
            rows = await session.execute(
                select(Message.provider_message_id, Message.text).where(Message.role == "user")
            )
            stored = {str(sid): text for sid, text in rows.all()}
        assert stored == {p["MessageSid"]: p["Body"] for p in sent}

        # A retry of a message already stored adds an inbox row that processing drops.
        assert await _post(stack, sent[0]) == 200
        await stack.stored()
        assert await _count(stack, Message) == 60
        assert await _count(stack, InboxMessage) == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_claim_never_shares_a_sender_with_a_live_claim(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        await stack.app[INBOX].close()  # claims taken by hand here
        a, b, c, d = (_sender() for _ in range(4))
        order = [a, b, c, a, d, b, d]
        async with stack.sessions().begin() as session:
            await inbox.add(
                session,
                [
                    inbox.inbox_row(
                        channel="whatsapp",
                        provider_message_id=f"SM-claim-{i}",
                        thread_key=f"whatsapp:{sender}",
                        tenant=DEFAULT_TENANT,
                        payload={},
                        received_at=utcnow(),
                    )
                    for i, sender in enumerate(order)
                ],
            )
        now = utcnow()
        lease = timedelta(seconds=30)
        async with stack.sessions().begin() as session:
            first = await inbox.claim(session, now=now, lease=lease, limit=3)  # a, b, c
        async with stack.sessions().begin() as session:
            second = await inbox.claim(session, now=now, lease=lease, limit=10)
        assert [i.thread_key for i in first] == [f"whatsapp:{s}" for s in (a, b, c)]
        # a's and b's later rows wait for the first claim; d is free.
        assert [i.thread_key for i in second] == [f"whatsapp:{d}"] * 2
        async with stack.sessions().begin() as session:
            assert await inbox.claim(session, now=now, lease=lease, limit=10) == []
            await inbox.remove(session, [first[0].id])
            await inbox.release(session, [i.id for i in first[1:]])
        async with stack.sessions().begin() as session:
            third = await inbox.claim(session, now=now, lease=lease, limit=10)
        # Oldest first: b's and c's released rows, then a's second (a is free now), b's second.
        assert [i.thread_key for i in third] == [f"whatsapp:{s}" for s in (b, c, a, b)]
        # A claim whose holder died runs out: everything left is claimable again.
        async with stack.sessions().begin() as session:
            later = await inbox.claim(session, now=now + lease * 2, lease=lease, limit=10)
        assert len(later) == 6


async def test_two_processes_keep_each_senders_order(tmp_path: Path) -> None:
    why = await postgres_reachable()
    if why is not None:
        unavailable("PostgreSQL", why)
    database = await create_database()
    try:
        async with (
            running_stack("production", tmp_path, database=database, **SETTINGS) as one,
            running_stack("production", tmp_path, database=database, **SETTINGS) as two,
        ):
            senders = [_sender() for _ in range(3)]
            sids: dict[str, list[str]] = {s: [] for s in senders}
            async with _held(one), _held(two):
                # One after another, alternating between the processes, as a provider's
                # retries and a load balancer would: a sender's order is the ack order.
                for i in range(48):
                    sender = senders[i % 3]
                    sid = f"SM{uuid.uuid4().hex}"
                    sids[sender].append(sid)
                    stack = one if i % 2 == 0 else two
                    assert await _post(stack, _params(sid, sender, f"mensagem {i}")) == 200
            # Both process at once, in claims of 16 rows from the same inbox.
            await asyncio.gather(one.stored(), two.stored())
            await asyncio.gather(one.stored(), two.stored())
            assert await _count(one, InboxMessage) == 0
            async with one.sessions()() as session:
                rows = await session.execute(
                    select(Message.provider_message_id)
                    .where(Message.role == "user")
                    .order_by(Message.id)
                )
                stored = list(rows.scalars())
            for sender in senders:
                assert [sid for sid in stored if sid in set(sids[sender])] == sids[sender]
    finally:
        await drop_database(database)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_row_that_keeps_failing_is_kept_aside_and_frees_its_sender(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="relaydesk.inbox")
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        sender = _sender()
        async with stack.sessions().begin() as session:
            await inbox.add(
                session,
                [
                    inbox.inbox_row(
                        channel="whatsapp",
                        provider_message_id="SM-broken",
                        thread_key=f"whatsapp:{sender}",
                        tenant=DEFAULT_TENANT,
                        payload={"not": "a message"},
                        received_at=utcnow(),
                    )
                ],
            )
        good = "SM" + uuid.uuid4().hex
        assert await _post(stack, _params(good, sender, "e agora?")) == 200
        await stack.stored()
        async with stack.sessions()() as session:
            broken = await session.scalar(
                select(InboxMessage).where(InboxMessage.provider_message_id == "SM-broken")
            )
            stored = await session.scalar(
                select(Message.provider_message_id).where(Message.role == "user")
            )
        assert broken is not None and broken.dead_at is not None
        assert broken.attempts == MAX_ATTEMPTS
        assert broken.last_error is not None and "ValidationError" in broken.last_error
        assert stored == good  # after the broken row was put aside, not before nor never
        # The error's class is in the text a test run prints, not only in the fields.
        failed = [r.getMessage() for r in caplog.records if r.name == "relaydesk.inbox"]
        assert failed.count("inbox row failed (ValidationError), retried later") == MAX_ATTEMPTS - 1
        assert failed[-1] == "inbox row kept aside after repeated failures (ValidationError)"


async def test_a_failed_commit_fails_every_waiting_webhook(tmp_path: Path) -> None:
    # A database without the schema: every write fails. (A database that cannot be opened would
    # leave aiosqlite's failed connection thread to report into a closed event loop later.)
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'unmigrated.db'}")
    writer = InboxWriter(make_sessionmaker(engine))
    messages = [
        InboundMessage("whatsapp", f"SM-{i}", "+5511998765432", "oi", utcnow()) for i in range(5)
    ]
    try:
        results = await asyncio.gather(
            *(writer.put([m], tenant=DEFAULT_TENANT) for m in messages), return_exceptions=True
        )
        assert all(isinstance(r, Exception) for r in results), results
        assert writer.commits == 0
    finally:
        await writer.close()
        await engine.dispose()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_claim_is_stored_in_one_transaction_whatever_its_size(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        await stack.app[INBOX].close()  # claims processed by hand here
        await stack.app[SCHEDULER].close()  # nothing answered: only storing is counted
        senders = [_sender() for _ in range(4)]
        first = [_params("SM" + uuid.uuid4().hex, s, "oi") for s in senders]
        burst = [_params("SM" + uuid.uuid4().hex, senders[i % 4], f"pedido {i}") for i in range(40)]
        for params in first:
            assert await _post(stack, params) == 200
        assert await stack.app[INBOX].process_claim() == 4  # the senders are known now
        for params in burst:
            assert await _post(stack, params) == 200
        statements: list[str] = []

        def count(conn: object, cursor: object, statement: str, *args: object) -> None:
            statements.append(" ".join(statement.split()))

        engine = stack.app[ENGINE].sync_engine
        event.listen(engine, "before_cursor_execute", count)
        try:
            assert await stack.app[INBOX].process_claim() == 40
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert await _count(stack, InboxMessage) == 0
        async with stack.app[SESSIONS]() as session:
            rows = await session.execute(_USER_SIDS)
            stored = [str(sid) for sid in rows.scalars()]
        assert stored == [p["MessageSid"] for p in first + burst]  # each sender's order kept
        # The look for claimable rows, the claim, the erased ones (erasure tombstones), the
        # stored ones, the identities, the episodes, their totals, the conversations (one
        # upsert for the lot), the senders' profile names (read once, until this process has
        # found them stored) and the deletes: a few statements, not a few per row.
        inserts = [s for s in statements if s.startswith(_INSERTS)]
        assert len(statements) - len(inserts) <= 18, statements
        assert sum(s.startswith("SELECT erasure_tombstones") for s in statements) == 1
        assert sum(s.startswith("INSERT INTO conversations") for s in statements) == 1
        if backend == "production":
            # The 40 messages in two inserts (32 and 8 rows: `in_bounded_shapes`), their
            # turns likewise (SQLite inserts row by row when the ids must follow the rows'
            # order).
            assert len(inserts) == 4


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_message_that_cannot_be_stored_holds_back_only_its_senders_later_ones(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path, **SETTINGS) as stack:
        await stack.app[INBOX].close()
        a, b = _sender(), _sender()
        now = utcnow()
        # a's first message names a campaign that does not exist: its episode cannot be
        # stored (a foreign key), while a's second message alone could be.
        broken = InboundMessage(
            "whatsapp", "SM-no-campaign", a, "oi", now, campaign_id="no-such-campaign"
        )
        later = InboundMessage("whatsapp", "SM-a-later", a, "e agora?", now)
        other = InboundMessage("whatsapp", "SM-b", b, "olá", now)
        await stack.app[INBOX_WRITER].put([broken, later, other], tenant=DEFAULT_TENANT)
        assert await stack.app[INBOX].process_claim() == 3
        async with stack.app[SESSIONS]() as session:
            rows = await session.execute(_USER_SIDS)
            assert list(rows.scalars()) == ["SM-b"]  # b's message did not wait for a's
        await stack.stored()  # a's first one is retried until it is kept aside
        async with stack.app[SESSIONS]() as session:
            aside = await session.scalar(
                select(InboxMessage).where(InboxMessage.provider_message_id == "SM-no-campaign")
            )
            rows = await session.execute(_USER_SIDS)
            stored = list(rows.scalars())
        assert aside is not None and aside.dead_at is not None
        assert aside.attempts == MAX_ATTEMPTS
        assert stored == ["SM-b", "SM-a-later"]  # a's later message once its first was put aside
