"""A web chat reply citing the knowledge base keeps its `[1]` markers in its text and carries
the documents apart, in its `message` frame's `citations` (number, title, URL or null): live,
in a reconnect's backlog and in the REST fallback, for the widget to show in its bubble. The
text lists no sources and holds no URL; a reply citing nothing has no `citations` key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gateway.webchat.fanout import FANOUT
from tests.support.cited_replies import add_public_document, citing_model
from tests.support.openai_server import model_settings
from tests.support.shared_gateways import next_frame
from tests.support.stack import running_stack
from tests.support.webchat import signed_visitor

RETURNS_URL = "https://shop.example.com/help/returns"
SENTENCES = (
    ("Returns are accepted within thirty days", "Returns policy"),
    ("Shipping takes two working days", "Shipping times"),
)
CITED = [
    {"number": 1, "title": "Returns policy", "url": RETURNS_URL},
    {"number": 2, "title": "Shipping times", "url": None},
]


async def _hello(socket: Any, visitor: str) -> None:
    await socket.send_json(
        {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
    )
    assert (await next_frame(socket))["type"] == "ready"


async def _reply_to(socket: Any, text: str, client_id: str) -> dict[str, Any]:
    await socket.send_json({"type": "message", "text": text, "client_message_id": client_id})
    while True:
        frame = await next_frame(socket)
        if frame["type"] == "message" and frame["role"] == "assistant":
            return frame


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_a_reply_citing_documents_carries_them_in_its_frame(
    tmp_path: Path, backend: str
) -> None:
    model = citing_model(SENTENCES)
    async with (
        model.serving() as model_url,
        running_stack(backend, tmp_path, **model_settings(model_url)) as stack,
    ):
        await add_public_document(
            stack.client,
            "Returns policy",
            "Returns are accepted within thirty days of delivery, with the receipt.",
            RETURNS_URL,
        )
        await add_public_document(
            stack.client, "Shipping times", "Shipping takes two working days to any address."
        )
        if backend == "production":  # a reply published before the fan-out listens is lost
            async with asyncio.timeout(5):
                await stack.app[FANOUT].wait_subscribed()
        visitor = await signed_visitor(stack.client)
        socket = await stack.client.ws_connect("/webchat/ws")
        await _hello(socket, visitor)

        plain = await _reply_to(socket, "hello there", "c1")
        assert "citations" not in plain
        cited = await _reply_to(socket, "How do returns and shipping work?", "c2")
        assert cited["text"] == (
            "Returns are accepted within thirty days [1]. Shipping takes two working days [2]."
        )
        assert cited["citations"] == CITED
        await socket.close()

        # Stored with the reply: the REST fallback and a reconnect's backlog carry them too.
        response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        stored = {m["message_id"]: m for m in (await response.json())["messages"]}
        assert stored[cited["message_id"]]["citations"] == CITED
        assert stored[cited["message_id"]]["text"] == cited["text"]
        assert "citations" not in stored[plain["message_id"]]
        again = await stack.client.ws_connect("/webchat/ws")
        await again.send_json(
            {"type": "hello", "visitor_id": visitor, "identity_token": None, "after": None}
        )
        replayed: list[dict[str, Any]] = []
        while len(replayed) < 4:
            frame = await next_frame(again)
            if frame["type"] == "message":
                replayed.append(frame)
        assert [f.get("citations") for f in replayed] == [None, None, None, CITED]
        await again.close()
