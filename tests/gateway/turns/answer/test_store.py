"""The fenced store: the reply, its turn's outcome and the delivery claim in one transaction,
refused for a stale writer and for a conversation taken meanwhile."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Media
from gateway.coordination.locks import Held
from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import CANNED_HANDOFF, MessageMeta
from gateway.storage.models import Conversation, Episode, Message, TurnRow
from gateway.storage.repositories import turns
from gateway.storage.updates import DeliveryClaim, TurnOutcome, TurnUsage
from gateway.turns.answer import ASKED_BY_CUSTOMER, Draft, StaleWriter, TakenMeanwhile
from gateway.turns.answer.store import ReplyStore
from tests.gateway.turns.answer.stored_turns import (
    answer_deps,
    read_pending,
    store_next_message,
    store_pending_turn,
)

ANSWERED = TurnOutcome(
    status="done",
    provider="scripted",
    model="scripted-1",
    usage=TurnUsage(50, 5, 10),
    attempts=1,
    report={"estimated_tokens": 55},
)


def _claim() -> DeliveryClaim:
    return DeliveryClaim("sending", utcnow() + timedelta(minutes=2))


async def test_the_reply_and_its_turns_outcome_are_stored_together(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Tem azul?"))
    claim = _claim()
    media = (Media("https://example.com/azul.png", "image/png"),)
    draft = Draft("Temos sim.", ANSWERED, attachments=media)
    stored = await ReplyStore(answer_deps(sessions)).store(
        pending.turn, Held(pending.turn.conversation_key, 1), pending.inbound, draft, claim
    )
    reply = stored.message
    assert not stored.more_pending  # its conversation's only turn
    assert (reply.role, reply.text, reply.meta) == (
        "assistant",
        "Temos sim.",
        MessageMeta(in_reply_to=pending.inbound.id),
    )
    assert reply.media == media
    async with sessions() as session:
        row = await session.get(TurnRow, pending.turn.id)
        episode = await session.get(Episode, pending.turn.episode_id)
    assert row is not None and episode is not None
    assert (row.status, row.reply_message_id, row.provider, row.model) == (
        "done",
        reply.id,
        "scripted",
        "scripted-1",
    )
    assert (row.prompt_tokens, row.completion_tokens, row.cached_tokens, row.attempts) == (
        50,
        5,
        10,
        1,
    )
    assert row.report == {"estimated_tokens": 55} and row.error is None
    assert row.delivery_status == "sending"
    assert row.delivery_lease_until is not None
    assert row.delivery_lease_until.replace(tzinfo=None) == claim.lease_until.replace(tzinfo=None)
    assert episode.token_total == pending.inbound.token_count + reply.token_count


async def test_a_newer_lock_holders_write_refuses_the_reply(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi"))
    key = pending.turn.conversation_key
    async with sessions.begin() as session:
        assert await turns.claim_fence(session, key, 5)
    store = ReplyStore(answer_deps(sessions))
    with pytest.raises(StaleWriter):
        await store.store(
            pending.turn, Held(key, 4), pending.inbound, Draft("x", ANSWERED), _claim()
        )
    async with sessions() as session:
        row = await session.get(TurnRow, pending.turn.id)
        replies = await session.scalar(
            select(func.count()).where(Message.customer_id == pending.turn.customer_id)
        )
    assert row is not None and row.status == "pending" and row.reply_message_id is None
    assert replies == 1  # the customer's message only


@pytest.mark.parametrize("owner", ["waiting", "human"])
async def test_a_conversation_taken_meanwhile_stores_nothing(
    sessions: async_sessionmaker[AsyncSession], owner: str
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi"))
    async with sessions.begin() as session:
        conversation = await session.scalar(
            select(Conversation).where(
                Conversation.conversation_key == pending.turn.conversation_key
            )
        )
        assert conversation is not None
        conversation.owner = owner
    store = ReplyStore(answer_deps(sessions))
    held = Held(pending.turn.conversation_key, None)
    with pytest.raises(TakenMeanwhile):
        await store.store(pending.turn, held, pending.inbound, Draft("x", ANSWERED), _claim())
    async with sessions() as session:
        row = await session.get(TurnRow, pending.turn.id)
        stored = await session.scalar(
            select(func.count()).where(Message.customer_id == pending.turn.customer_id)
        )
    assert row is not None and row.status == "pending" and stored == 1

    await store.mark_human(pending.turn)
    async with sessions() as session:
        marked = await session.get(TurnRow, pending.turn.id)
    assert marked is not None and marked.status == "human" and marked.delivery_status is None


async def test_a_hand_over_moves_the_conversation_to_waiting_with_the_notice(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    pending = await read_pending(sessions, await store_pending_turn(sessions, "atendente"))
    notice = Draft(
        "Um atendente já vem.",
        TurnOutcome(status="done"),
        CANNED_HANDOFF,
        handoff=ASKED_BY_CUSTOMER,
    )
    held = Held(pending.turn.conversation_key, None)
    reply = (
        await ReplyStore(answer_deps(sessions)).store(
            pending.turn, held, pending.inbound, notice, _claim()
        )
    ).message
    assert reply.meta.canned == CANNED_HANDOFF
    async with sessions() as session:
        conversation = await session.scalar(
            select(Conversation).where(
                Conversation.conversation_key == pending.turn.conversation_key
            )
        )
        row = await session.get(TurnRow, pending.turn.id)
    assert conversation is not None and conversation.owner == "waiting"
    # A notice records no model: only its status, reply and claim.
    assert row is not None and (row.status, row.model, row.provider) == ("done", None, None)


async def test_the_stored_reply_tells_whether_another_turn_waits_behind_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # The drain reads the conversation's next turn only when one was pending as the reply was
    # written: one statement less per answered message.
    pending = await read_pending(sessions, await store_pending_turn(sessions, "Oi"))
    await store_next_message(sessions, pending, "Tem azul?")
    store = ReplyStore(answer_deps(sessions))
    held = Held(pending.turn.conversation_key, None)
    first = await store.store(pending.turn, held, pending.inbound, Draft("Oi!", ANSWERED), _claim())
    assert first.more_pending
    second = await read_pending(sessions, pending.turn.conversation_key)
    assert second.turn.id != pending.turn.id
    last = await store.store(second.turn, held, second.inbound, Draft("Temos.", ANSWERED), _claim())
    assert not last.more_pending
