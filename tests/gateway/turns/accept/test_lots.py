"""Accept stores every message as part of a lot, through one path: a request's message is a
lot of one (no lookup before its insert unless Redis saw it before), background messages that
start together are one lot (one insert of messages and one of turns), a replay is answered by
the stored message, and a lot with a message that cannot be stored is stored as lots of one,
each sender's messages in their arrival order, a sender stopping at its failed message."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from redis.asyncio import Redis
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import InboundMessage, PayloadInvalid
from context import TiktokenCounter, load_encoding
from gateway.channel_catalog import BY_NAME
from gateway.config import Settings
from gateway.coordination.dedupe import SeenKeys
from gateway.runtime.clock import utcnow
from gateway.runtime.metrics import Metrics
from gateway.storage.records import MessageRecord
from gateway.storage.repositories import messages, turns
from gateway.storage.repositories.tenants import SettingsCache
from gateway.turns.accept import Accepted, Acceptor, LotWriter, ThreadBlocked
from gateway.turns.backpressure import Backpressure

COUNTER = TiktokenCounter(load_encoding())
SETTINGS = Settings(  # type: ignore[call-arg]
    RELAYDESK_DATABASE_URL="sqlite+aiosqlite://",
    RELAYDESK_WEBCHAT_SECRET="webchat-secret-for-tests-0123456789abcdef",
)
Sessions = async_sessionmaker[AsyncSession]


def _acceptor(
    sessions: Sessions, *, seen: SeenKeys | None = None, channels: tuple[str, ...] = ()
) -> Acceptor:
    names = channels or ("whatsapp", "telegram")
    return Acceptor(
        sessions=sessions,
        writer=LotWriter(
            settings=SETTINGS,
            counter=COUNTER,
            evidence={name: BY_NAME[name].evidence for name in names},
            tenant_cache=SettingsCache(),
        ),
        backpressure=Backpressure(),
        metrics=Metrics.create(),
        seen=seen,
    )


def _whatsapp_sender() -> str:
    return f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"


def _message(sender: str, text: str, *, channel: str = "whatsapp", **fields: Any) -> InboundMessage:
    return InboundMessage(
        channel=channel,
        provider_message_id=f"SM{uuid.uuid4().hex}",
        sender=sender,
        text=text,
        received_at=fields.pop("received_at", utcnow()),
        **fields,
    )


async def _stored(sessions: Sessions, *inbound: InboundMessage) -> list[MessageRecord | None]:
    async with sessions() as session:
        found = await messages.find_by_provider_ids(
            session, [(m.channel, m.provider_message_id) for m in inbound]
        )
    return [found.get((m.channel, m.provider_message_id)) for m in inbound]


async def _has_turn(sessions: Sessions, message_id: int) -> bool:
    async with sessions() as session:
        return await turns.turn_for_message(session, message_id) is not None


@contextmanager
def _statements(sessions: Sessions) -> Iterator[list[str]]:
    engine = sessions.kw["bind"].sync_engine
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(" ".join(str(args[2]).split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _lookups(statements: list[str]) -> list[str]:
    """Reads of messages by (channel, provider message id)."""
    return [s for s in statements if s.startswith("SELECT") and "provider_message_id) IN" in s]


async def test_a_request_message_is_a_lot_of_one_with_no_lookup_before_its_insert(
    sessions: Sessions,
) -> None:
    accept = _acceptor(sessions)
    inbound = _message(_whatsapp_sender(), "oi, quero saber do meu pedido")
    with _statements(sessions) as statements:
        accepted = await accept.accept(inbound)

    [stored] = await _stored(sessions, inbound)
    assert stored is not None and stored.id == accepted.message_id
    assert not accepted.duplicate and accepted.customer_id == stored.customer_id
    assert accepted.conversation_key == f"{stored.customer_id}:whatsapp"
    assert await _has_turn(sessions, stored.id)
    assert _lookups(statements) == []
    assert sum(s.startswith("INSERT INTO messages") for s in statements) == 1
    assert sum(s.startswith("INSERT INTO turns") for s in statements) == 1


async def test_a_lot_of_several_senders_is_inserted_in_a_few_statements_in_arrival_order(
    sessions: Sessions,
) -> None:
    accept = _acceptor(sessions)
    senders = [_whatsapp_sender() for _ in range(3)]
    start = utcnow()
    lot = [
        _message(sender, f"mensagem {n}", received_at=start + timedelta(seconds=n))
        for n in range(3)
        for sender in senders
    ]
    with _statements(sessions) as statements:
        outcomes = await asyncio.gather(*(accept.accept(m, background=True) for m in lot))

    assert [o.duplicate for o in outcomes] == [False] * len(lot)
    if sessions.kw["bind"].dialect.name == "postgresql":  # SQLite runs the rows one by one
        # Nine rows of a kind: a chunk of 8 and one of 1 (`in_bounded_shapes`).
        assert sum(s.startswith("INSERT INTO messages") for s in statements) == 2
        assert sum(s.startswith("INSERT INTO turns") for s in statements) == 2
    assert len(_lookups(statements)) == 1
    stored = await _stored(sessions, *lot)
    assert [r.id if r else None for r in stored] == [o.message_id for o in outcomes]
    for sender in senders:
        mine = [o for m, o in zip(lot, outcomes, strict=True) if m.sender == sender]
        assert [o.message_id for o in mine] == sorted(o.message_id for o in mine)
        assert len({o.conversation_key for o in mine}) == 1
        assert len({o.customer_id for o in mine}) == 1
    assert len({o.customer_id for o in outcomes}) == len(senders)
    for outcome in outcomes:
        assert await _has_turn(sessions, outcome.message_id)


async def test_a_replay_is_answered_by_the_stored_message_alone_and_in_a_lot(
    sessions: Sessions,
) -> None:
    await _replays(sessions, None)


async def test_a_replay_seen_by_redis_is_answered_by_the_stored_message(
    sessions: Sessions, redis: Redis
) -> None:
    await _replays(sessions, redis)


async def _replays(sessions: Sessions, redis: Redis | None) -> None:
    seen = SeenKeys(redis) if redis is not None else None
    accept = _acceptor(sessions, seen=seen)
    sender = _whatsapp_sender()
    first = _message(sender, "primeira")
    original = await accept.accept(first)

    replay = await accept.accept(first)
    assert replay == Accepted(
        original.message_id, original.customer_id, True, replay.conversation_key
    )
    assert replay.conversation_key == original.conversation_key

    later = _message(sender, "segunda")
    together = await asyncio.gather(
        accept.accept(first, background=True),
        accept.accept(later, background=True),
    )
    assert together[0].duplicate and together[0].message_id == original.message_id
    assert not together[1].duplicate and together[1].message_id > original.message_id
    assert [r.id if r else None for r in await _stored(sessions, first, later)] == [
        original.message_id,
        together[1].message_id,
    ]
    async with sessions() as session:
        thread = await messages.thread_messages(session, f"whatsapp:{sender}", limit=10)
    assert [m.id for m in thread] == [original.message_id, together[1].message_id]
    if redis is not None:
        assert await redis.exists(f"relaydesk:seen:whatsapp:{later.provider_message_id}")


async def test_a_message_that_cannot_be_stored_fails_alone_and_holds_back_only_its_sender(
    sessions: Sessions,
) -> None:
    accept = _acceptor(sessions, channels=("whatsapp",))  # no telegram evidence: refused
    ana, bia = _whatsapp_sender(), _whatsapp_sender()
    stranger = f"{uuid.uuid4().int % 10**9}"
    lot = [
        _message(ana, "ana 1"),
        _message(stranger, "x 1", channel="telegram"),
        _message(bia, "bia 1"),
        _message(stranger, "x 2", channel="telegram"),
        _message(ana, "ana 2"),
    ]
    outcomes = await asyncio.gather(
        *(accept.accept(m, background=True) for m in lot), return_exceptions=True
    )

    assert isinstance(outcomes[1], PayloadInvalid)
    assert isinstance(outcomes[3], ThreadBlocked)
    stored = await _stored(sessions, *lot)
    assert stored[1] is None and stored[3] is None
    kept = [outcomes[0], outcomes[2], outcomes[4]]
    assert all(isinstance(o, Accepted) and not o.duplicate for o in kept)
    assert [r.id if r else None for r in (stored[0], stored[2], stored[4])] == [
        o.message_id for o in kept if isinstance(o, Accepted)
    ]
    first_ana, last_ana = stored[0], stored[4]
    assert first_ana is not None and last_ana is not None and first_ana.id < last_ana.id


async def test_an_edit_in_a_lot_replaces_the_version_stored_before_it_and_is_not_answered(
    sessions: Sessions,
) -> None:
    accept = _acceptor(sessions)
    sender = _whatsapp_sender()
    original = _message(sender, "pedido 123", extra={"message_key": "k1"})
    edit = _message(sender, "pedido 124", kind="edit", edit_of="k1", extra={"message_key": "k1"})
    after = _message(sender, "obrigado")
    outcomes = await asyncio.gather(
        *(accept.accept(m, background=True) for m in (original, edit, after))
    )

    stored = await _stored(sessions, original, edit, after)
    assert [r.id if r else None for r in stored] == [o.message_id for o in outcomes]
    assert stored[1] is not None and stored[1].supersedes_id == outcomes[0].message_id
    assert [await _has_turn(sessions, o.message_id) for o in outcomes] == [True, False, True]
