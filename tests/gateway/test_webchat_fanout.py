"""Web chat replies across gateway processes: two apps on one PostgreSQL database and Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer

from channels.base import OutboundMessage
from gateway.app import create_app
from gateway.config import Settings
from gateway.keys import HUB, SCHEDULER
from gateway.webchat_fanout import FANOUT
from gateway.webchat_hub import WebChatHub
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    postgres_reachable,
    redis_reachable,
    unavailable,
)
from tests.support.stack import API_KEY, WEBCHAT_SECRET


@asynccontextmanager
async def two_gateways() -> AsyncIterator[tuple[TestClient, TestClient]]:  # type: ignore[type-arg]
    for what, why in (
        ("PostgreSQL", await postgres_reachable()),
        ("Redis", await redis_reachable()),
    ):
        if why is not None:
            unavailable(what, why)
    url = await create_database()
    values: dict[str, object] = {
        "RELAYDESK_API_KEY": API_KEY,
        "RELAYDESK_WEBCHAT_SECRET": WEBCHAT_SECRET,
        "RELAYDESK_DATABASE_URL": url,
        "RELAYDESK_REDIS_URL": REDIS_URL,
        "RELAYDESK_AUTO_MIGRATE": True,
    }
    try:
        async with AsyncExitStack() as stack:
            clients = []
            # One after the other: the second start finds the schema already migrated.
            for _ in range(2):
                client = TestClient(TestServer(create_app(Settings(**values))))  # type: ignore[arg-type]
                await client.start_server()
                stack.push_async_callback(client.close)
                async with asyncio.timeout(5):
                    await client.app[FANOUT].wait_subscribed()
                clients.append(client)
            yield clients[0], clients[1]
    finally:
        await drop_database(url)


async def _next_frame(socket: Any, timeout: float = 10.0) -> dict[str, Any]:
    message = await socket.receive(timeout=timeout)
    assert message.type == WSMsgType.TEXT, message
    frame: dict[str, Any] = message.json()
    return frame


async def test_reply_produced_by_one_process_reaches_the_socket_held_by_another() -> None:
    async with two_gateways() as (a, b):
        visitor = "v" + uuid.uuid4().hex
        socket = await a.ws_connect("/webchat/ws")
        await socket.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        assert (await _next_frame(socket)) == {"type": "ready", "visitor_id": visitor}

        response = await b.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "Onde está o pedido?", "client_message_id": "c1"},
        )
        assert response.status == 202
        message_id = (await response.json())["message_id"]

        reply = await _next_frame(socket)
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
