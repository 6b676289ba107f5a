"""Web chat typing and partial frames, and the reply_to of the stored reply, on websockets of the
real app: in one process, and across two processes through the Redis fan-out."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

from channels.base import OutboundMessage, ReplyPreviews, TypingSignals
from channels.webchat import WebChatChannel
from gateway.keys import ADAPTERS, SCHEDULER
from tests.support.shared_gateways import next_frame, shared_gateways
from tests.support.stack import running_stack
from tests.support.webchat import signed_visitor

NOW = datetime(2026, 11, 29, tzinfo=UTC)
MESSAGE_FIELDS = {
    "type",
    "message_id",
    "role",
    "text",
    "created_at",
    "client_message_id",
    "author",
    "author_name",
}


async def _joined(client: TestClient, visitor: str) -> Any:  # type: ignore[type-arg]
    socket = await client.ws_connect("/webchat/ws")
    await socket.send_json(
        {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
    )
    assert (await next_frame(socket)) == {"type": "ready", "visitor_id": visitor}
    return socket


async def _nothing_more(socket: Any, wait_s: float = 0.3) -> None:
    try:
        extra = await socket.receive(timeout=wait_s)
    except TimeoutError:
        return
    raise AssertionError(f"unexpected frame {extra}")


def _webchat(client: TestClient) -> WebChatChannel:  # type: ignore[type-arg]
    adapter = client.app[ADAPTERS]["webchat"]
    assert isinstance(adapter, WebChatChannel)
    assert isinstance(adapter, TypingSignals) and isinstance(adapter, ReplyPreviews)
    return adapter


async def test_typing_partials_and_the_reply_reach_the_visitors_socket(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        visitor, stranger = await signed_visitor(stack.client), await signed_visitor(stack.client)
        socket = await _joined(stack.client, visitor)
        other = await _joined(stack.client, stranger)
        webchat = _webchat(stack.client)
        assert webchat.typing_repeat_s == 5.0

        # A real message, answered by the real flow: the stored reply says what it answers.
        await socket.send_json({"type": "message", "text": "Olá", "client_message_id": "c:1"})
        ack = await next_frame(socket)
        assert ack["type"] == "ack" and ack["client_message_id"] == "c:1"
        await stack.idle()
        # The flow may show the reply being written first (the instant offline model leaves
        # little to show; tests/flows/answering/test_streamed_replies.py streams a slow one).
        frames = [await next_frame(socket)]
        while frames[-1]["type"] != "message":
            frames.append(await next_frame(socket))
        *shown, reply = frames
        assert all(frame["type"] in ("typing", "partial") for frame in shown)
        assert all(frame["reply_to"] == "c:1" for frame in shown)
        assert reply["type"] == "message" and reply["role"] == "assistant"
        assert set(reply) == MESSAGE_FIELDS | {"reply_to"}
        assert reply["reply_to"] == "c:1" and reply["client_message_id"] is None
        assert (reply["author"], reply["author_name"]) == ("bot", None)

        # The next reply being written, as the answer step shows it.
        reply_to = f"{visitor}:c:2"
        await webchat.typing(visitor, reply_to)
        await webchat.preview(visitor, reply_to, "Seu pedido")
        await webchat.preview(visitor, reply_to, "Seu pedido 4471 saiu")
        await webchat.preview(visitor, reply_to, "Seu pedido")  # a retried model call
        assert [await next_frame(socket) for _ in range(4)] == [
            {"type": "typing", "reply_to": "c:2"},
            {"type": "partial", "reply_to": "c:2", "text": "Seu pedido"},
            {"type": "partial", "reply_to": "c:2", "text": "Seu pedido 4471 saiu"},
            {"type": "partial", "reply_to": "c:2", "text": "Seu pedido"},
        ]
        await webchat.send(
            OutboundMessage("webchat", visitor, "Seu pedido saiu hoje.", reply_to, "9001")
        )
        final = await next_frame(socket)
        assert final["reply_to"] == "c:2" and final["message_id"] == "9001"
        assert (final["type"], final["role"], final["text"]) == (
            "message",
            "assistant",
            "Seu pedido saiu hoje.",
        )
        await _nothing_more(socket)
        await _nothing_more(other, 0.05)  # another visitor sees none of it

        # Previews are never stored: the REST fallback has only the stored messages.
        response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        assert response.status == 200
        stored = (await response.json())["messages"]
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert [m["text"] for m in stored] == ["Olá", reply["text"]]
        await socket.close()
        await other.close()


async def test_typing_without_a_known_message_names_none() -> None:
    frames: list[tuple[str, dict[str, Any]]] = []

    async def send_frame(visitor: str, frame: dict[str, Any]) -> None:
        frames.append((visitor, frame))

    async def deliver(message: OutboundMessage) -> None:
        raise AssertionError("typing and previews never deliver")

    webchat = WebChatChannel(deliver, lambda: NOW, send_frame=send_frame)
    await webchat.typing("visitor-1", None)
    await webchat.preview("visitor-1", "no-colon", "Oi")
    assert frames == [
        ("visitor-1", {"type": "typing", "reply_to": None}),
        ("visitor-1", {"type": "partial", "reply_to": None, "text": "Oi"}),
    ]
    # Without a frame sink (nobody to show them to) they do nothing.
    quiet = WebChatChannel(deliver, lambda: NOW)
    await quiet.typing("visitor-1", "visitor-1:c1")
    await quiet.preview("visitor-1", "visitor-1:c1", "Oi")
    assert len(frames) == 2


async def test_typing_and_partials_from_one_process_reach_a_socket_held_by_another() -> None:
    async with shared_gateways([{}, {}]) as (a, b):
        visitor = await signed_visitor(a)
        socket = await _joined(a, visitor)
        webchat = _webchat(b)
        reply_to = f"{visitor}:c1"
        await webchat.typing(visitor, reply_to)
        await webchat.preview(visitor, reply_to, "Um momento")
        await webchat.preview(visitor, reply_to, "Um")
        await webchat.send(OutboundMessage("webchat", visitor, "Um momento, por favor.", reply_to))
        assert [await next_frame(socket) for _ in range(3)] == [
            {"type": "typing", "reply_to": "c1"},
            {"type": "partial", "reply_to": "c1", "text": "Um momento"},
            {"type": "partial", "reply_to": "c1", "text": "Um"},
        ]
        final = await next_frame(socket)
        assert (final["type"], final["reply_to"], final["text"]) == (
            "message",
            "c1",
            "Um momento, por favor.",
        )
        # Exactly once: published by b, broadcast by a only (b holds no socket for the visitor).
        for client in (a, b):
            await client.app[SCHEDULER].idle()
        await _nothing_more(socket, 0.5)
        await socket.close()
