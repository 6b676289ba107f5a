"""Handoff beyond WhatsApp: an operator's message reaches the visitor's web chat socket live;
every owner change and message is recorded as an event in its own transaction; the waiting
gauge; a merge moves the conversation with its customer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from sqlalchemy import select

from gateway.customers.operator_actions import merge_customers
from gateway.storage.models import Conversation, OutboundEvent
from tests.support.app_settings import AUTH
from tests.support.shared_gateways import next_frame
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor

BASE = "/v1/operator/conversations"


async def _joined(client: TestClient, visitor: str) -> Any:  # type: ignore[type-arg]
    socket = await client.ws_connect("/webchat/ws")
    await socket.send_json(
        {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
    )
    assert (await next_frame(socket)) == {"type": "ready", "visitor_id": visitor}
    return socket


async def _message(socket: Any) -> dict[str, Any]:
    """The next stored message on the socket (typing and partial frames passed over)."""
    while True:
        frame = await next_frame(socket)
        if frame["type"] == "message":
            return dict(frame)


async def _post(stack: Stack, path: str, **body: Any) -> tuple[int, Any]:
    response = await stack.client.post(path, json=body, headers=AUTH)
    return response.status, await response.json()


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_an_operator_message_reaches_the_visitor_socket(tmp_path: Path, backend: str) -> None:
    async with running_stack(backend, tmp_path) as stack:
        visitor = await signed_visitor(stack.client)
        socket = await _joined(stack.client, visitor)
        await socket.send_json({"type": "message", "text": "Olá", "client_message_id": "c:1"})
        assert (await next_frame(socket))["type"] == "ack"
        await stack.idle()
        await _message(socket)  # the bot's reply

        status, held = await _post(
            stack,
            f"{BASE}/handoff",
            channel="webchat",
            external_id=f"web:anon:{visitor}",
            reason="vip",
            actor="alice",
        )
        assert status == 200, held
        status, written = await _post(
            stack, f"{BASE}/{held['id']}/messages", text="Oi! Aqui é a Alice.", actor="alice"
        )
        assert status == 202
        live = await _message(socket)
        assert (live["role"], live["text"]) == ("assistant", "Oi! Aqui é a Alice.")
        assert live["message_id"] == str(written["message_id"])
        assert live["reply_to"] is None
        assert (live["author"], live["author_name"]) == ("operator", "alice")
        await socket.close()


async def test_owner_changes_and_messages_are_recorded_as_events(tmp_path: Path) -> None:
    async with running_stack(
        "embedded",
        tmp_path,
        # Nobody listens there: the events stay recorded, their sending retried.
        RELAYDESK_EVENTS_URL="http://127.0.0.1:9/events",
        RELAYDESK_EVENTS_SECRET="a-secret-of-at-least-sixteen-bytes",
    ) as stack:
        visitor = await signed_visitor(stack.client)
        response = await stack.client.post(
            "/webchat/messages",
            json={
                "visitor_id": visitor,
                "text": "quero falar com uma pessoa",
                "client_message_id": "c1",
            },
        )
        assert response.status in (200, 202)
        await stack.idle()
        async with stack.sessions()() as session:
            conversation = await session.scalar(select(Conversation))
            assert conversation is not None and conversation.owner == "waiting"
        status, _ = await _post(
            stack, f"{BASE}/{conversation.id}/take", actor="alice", reason="queue"
        )
        assert status == 200
        status, _ = await _post(
            stack, f"{BASE}/{conversation.id}/messages", text="Oi, sou a Alice", actor="alice"
        )
        assert status == 202
        async with stack.sessions()() as session:
            events = list(await session.scalars(select(OutboundEvent).order_by(OutboundEvent.id)))
        kinds = [event.kind for event in events]
        assert kinds == [
            "message.created",  # the customer's message
            "conversation.waiting",
            "message.created",  # the canned reply telling them
            "conversation.owner_changed",
            "message.created",  # the operator's
        ]
        waiting = events[1].payload
        assert waiting["previous_owner"] == "bot" and waiting["actor"] == "bot"
        assert waiting["conversation"]["owner"] == "waiting"
        taken = events[3].payload
        assert (taken["previous_owner"], taken["actor"], taken["reason"]) == (
            "waiting",
            "alice",
            "queue",
        )
        assert taken["conversation"]["held_by"] == "alice"
        written = events[4].payload["message"]
        assert (written["role"], written["author"], written["text"]) == (
            "assistant",
            "operator",
            "Oi, sou a Alice",
        )
        assert events[0].payload["message"]["author"] == "customer"
        assert events[0].payload["conversation"]["id"] == conversation.id


async def test_the_gauge_counts_conversations_waiting_too_long(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        visitor = await signed_visitor(stack.client)
        await stack.client.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "falar com um humano", "client_message_id": "c1"},
        )
        await stack.idle()

        async def gauge() -> float:
            body = await (await stack.client.get("/metrics")).text()
            line = next(
                line
                for line in body.splitlines()
                if line.startswith("relaydesk_conversations_waiting_too_long ")
            )
            return float(line.split()[1])

        assert await gauge() == 0.0  # waiting, but not for long yet
        async with stack.sessions().begin() as session:
            conversation = await session.scalar(select(Conversation))
            assert conversation is not None and conversation.owner == "waiting"
            conversation.owner_since = conversation.owner_since.replace(year=2020)
        assert await gauge() == 1.0
        listed = await (await stack.client.get(BASE, headers=AUTH)).json()
        assert listed["conversations"][0]["waiting_too_long"] is True


async def test_a_merge_moves_the_conversation_with_its_customer(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        first, second = await signed_visitor(stack.client), await signed_visitor(stack.client)
        for visitor in (first, second):
            await stack.client.post(
                "/webchat/messages",
                json={"visitor_id": visitor, "text": "Olá", "client_message_id": "c1"},
            )
        await stack.idle()
        async with stack.sessions()() as session:
            rows = list(await session.scalars(select(Conversation).order_by(Conversation.id)))
        assert len(rows) == 2
        source, target = rows
        status, _ = await _post(stack, f"{BASE}/{source.id}/take", actor="alice", reason="r")
        assert status == 200
        async with stack.sessions().begin() as session:
            await merge_customers(
                session, source.customer_id, target.customer_id, actor="op", reason="same"
            )
        async with stack.sessions()() as session:
            after = list(await session.scalars(select(Conversation)))
        # One customer on one channel: one conversation, held as the moved one was.
        assert len(after) == 1
        [merged] = after
        assert merged.customer_id == target.customer_id
        assert merged.conversation_key == f"{target.customer_id}:webchat"
        assert (merged.owner, merged.held_by) == ("human", "alice")


def _call(text: str, confidence: float, customer_id: str) -> dict[str, Any]:
    return {
        "call_id": "call-thread-1",
        "caller": "+5511955554444",
        "customer_id": customer_id,
        "started_at": "2026-11-02T14:00:00Z",
        "format": "native",
        "customer_speaker": None,
        "transcript": {
            "segments": [
                {
                    "speaker": "customer",
                    "text": text,
                    "start": 0.0,
                    "end": 4.0,
                    "confidence": confidence,
                    "words": None,
                }
            ]
        },
    }


async def test_a_conversation_shows_the_customers_call_beside_it(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        visitor = await signed_visitor(stack.client)
        socket = await _joined(stack.client, visitor)
        await socket.send_json({"type": "message", "text": "Olá", "client_message_id": "c:1"})
        assert (await next_frame(socket))["type"] == "ack"
        await stack.idle()
        await socket.close()
        status, listed = await _get(stack, BASE)
        assert status == 200
        (conversation,) = listed["conversations"]
        # The call center names the same customer; the call is re-posted once (a new version).
        for text in ("o pedido é o 4471", "o pedido é o 4477"):
            posted = await stack.client.post(
                "/v1/transcripts",
                json=_call(text, 0.58, conversation["customer_id"]),
                headers=AUTH,
            )
            assert posted.status == 201, await posted.text()

        status, detail = await _get(stack, f"{BASE}/{conversation['id']}")
        assert status == 200
        lines = [(m["channel"], m["author"], m["text"]) for m in detail["messages"]]
        assert ("webchat", "customer", "Olá") in lines
        phone = [m for m in detail["messages"] if m["channel"] == "phone"]
        assert [(m["text"], m["transcript_confidence"]) for m in phone] == [
            ("o pedido é o 4477", 0.58)
        ]
        assert all(m["transcript_confidence"] is None for m in detail["messages"] if m not in phone)


async def _get(stack: Stack, path: str) -> tuple[int, Any]:
    response = await stack.client.get(path, headers=AUTH)
    return response.status, await response.json()
