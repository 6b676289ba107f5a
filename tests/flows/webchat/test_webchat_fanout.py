"""Web chat replies across gateway processes: two apps on one PostgreSQL database and Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient

from channels.base import OutboundMessage
from gateway.keys import HUB, SCHEDULER
from gateway.webchat.hub import WebChatHub
from tests.support.shared_gateways import next_frame, shared_gateways
from tests.support.webchat import signed_visitor


@asynccontextmanager
async def two_gateways() -> AsyncIterator[tuple[TestClient, TestClient]]:  # type: ignore[type-arg]
    async with shared_gateways([{}, {}]) as (a, b):
        yield a, b


async def test_reply_produced_by_one_process_reaches_the_socket_held_by_another() -> None:
    async with two_gateways() as (a, b):
        visitor = await signed_visitor(b)  # any process accepts an id another one issued
        socket = await a.ws_connect("/webchat/ws")
        await socket.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        assert (await next_frame(socket)) == {"type": "ready", "visitor_id": visitor}

        response = await b.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "Onde está o pedido?", "client_message_id": "c1"},
        )
        assert response.status == 202
        message_id = (await response.json())["message_id"]

        reply = await next_frame(socket)
        assert reply["type"] == "message" and reply["role"] == "assistant"
        assert reply["text"] and reply["message_id"] != message_id
        assert a.app[HUB].connected(visitor) == 1 and b.app[HUB].connected(visitor) == 0

        # Exactly once: with both processes idle, nothing else arrives on the socket.
        for client in (a, b):
            await client.app[SCHEDULER].sweep()
            await client.app[SCHEDULER].idle()
        try:
            extra = await socket.receive(timeout=0.5)
        except TimeoutError:
            extra = None
        assert extra is None, extra
        await socket.close()


class _Socket:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    async def send_json(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)


async def test_deliver_publishes_instead_of_broadcasting() -> None:
    published: list[tuple[str, dict[str, Any]]] = []

    async def publish(visitor: str, frame: dict[str, Any]) -> None:
        published.append((visitor, frame))

    hub = WebChatHub(publish)
    socket = _Socket()
    hub.add("visitor-1", socket)  # type: ignore[arg-type]
    await hub.deliver(OutboundMessage(channel="webchat", recipient="visitor-1", text="oi"))
    assert [visitor for visitor, _ in published] == ["visitor-1"]
    assert published[0][1]["text"] == "oi"
    assert socket.frames == []  # the subscriber broadcasts it, once


async def test_deliver_falls_back_to_local_sockets_when_publishing_fails() -> None:
    async def publish(visitor: str, frame: dict[str, Any]) -> None:
        raise ConnectionError("redis is down")

    hub = WebChatHub(publish)
    socket = _Socket()
    hub.add("visitor-1", socket)  # type: ignore[arg-type]
    await hub.deliver(OutboundMessage(channel="webchat", recipient="visitor-1", text="oi"))
    assert [frame["text"] for frame in socket.frames] == ["oi"]
