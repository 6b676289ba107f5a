"""Web chat replies streamed as the model writes them: a typing signal while the model thinks,
partial frames growing on the visitor's socket, one final frame with the stored message — and
a stream that breaks on every attempt ends with the fallback message, never a half reply stored
as final. The model is a local OpenAI-compatible server streaming server-sent events."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer
from sqlalchemy import select

from gateway.providers import FALLBACK_MESSAGE
from gateway.storage.models import Message, TurnRow
from tests.support.openai_server import FakeOpenAI
from tests.support.shared_gateways import next_frame
from tests.support.stack import Stack, running_stack


@asynccontextmanager
async def _streaming_stack(model: FakeOpenAI, tmp_path: Path) -> AsyncIterator[Stack]:
    server = TestServer(model.app())
    await server.start_server()
    try:
        async with running_stack(
            "embedded",
            tmp_path,
            RELAYDESK_MODEL="openai:test-model",
            RELAYDESK_MODEL_BASE_URL=str(server.make_url("/v1")),
        ) as stack:
            yield stack
    finally:
        await server.close()


async def _say(stack: Stack, text: str) -> tuple[str, Any, list[dict[str, Any]]]:
    """A visitor says `text`; (visitor, socket, the frames up to the stored reply's)."""
    visitor = "v" + uuid.uuid4().hex
    socket = await stack.client.ws_connect("/webchat/ws")
    await socket.send_json({"type": "hello", "visitor_id": visitor, "after": None})
    assert (await next_frame(socket))["type"] == "ready"
    await socket.send_json({"type": "message", "text": text, "client_message_id": "m1"})
    assert (await next_frame(socket))["type"] == "ack"
    frames = [await next_frame(socket, timeout=20)]
    while frames[-1]["type"] != "message":
        frames.append(await next_frame(socket, timeout=20))
    return visitor, socket, frames


async def _rows(stack: Stack) -> tuple[list[Message], list[TurnRow]]:
    async with stack.sessions()() as session:
        messages = list((await session.scalars(select(Message).order_by(Message.id))).all())
        turns = list((await session.scalars(select(TurnRow))).all())
    return messages, turns


async def test_a_reply_grows_on_the_socket_and_only_the_finished_one_is_stored(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI(streaming=True, first_token_s=0.4, tokens_per_s=40)
    async with _streaming_stack(model, tmp_path) as stack:
        visitor, socket, frames = await _say(stack, "Onde está meu pedido 4471?")
        *shown, final = frames
        expected = "re: Onde está meu pedido 4471?"
        assert final["role"] == "assistant" and final["text"] == expected
        assert final["reply_to"] == "m1"
        # The model waited before its first token: the typing signal came first.
        assert shown[0] == {"type": "typing", "reply_to": "m1"}
        partials = [frame["text"] for frame in shown if frame["type"] == "partial"]
        assert len(partials) >= 2, shown
        assert all(expected.startswith(text) for text in partials)
        assert [len(text) for text in partials] == sorted(len(text) for text in partials)
        # The REST fallback knows only stored messages: the question and the finished reply.
        response = await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        listed = (await response.json())["messages"]
        assert [(m["role"], m["text"]) for m in listed] == [
            ("user", "Onde está meu pedido 4471?"),
            ("assistant", expected),
        ]
        await socket.close()
        messages, turns = await _rows(stack)
    assert [m.text for m in messages if m.role == "assistant"] == [expected]
    [turn] = turns
    assert turn.status == "done"
    assert turn.prompt_tokens == 100 and turn.completion_tokens > 0  # read from the stream
    assert model.calls[0].streamed


async def test_a_stream_broken_on_every_attempt_ends_with_the_fallback_not_half_a_reply(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI(streaming=True, tokens_per_s=200, break_after_pieces=2)
    async with _streaming_stack(model, tmp_path) as stack:
        _, socket, frames = await _say(stack, "Qual o prazo de entrega do pedido?")
        await socket.close()
        messages, turns = await _rows(stack)
    *shown, final = frames
    assert final["text"] == FALLBACK_MESSAGE
    # What was shown while it streamed was a beginning of the model's text, never stored.
    assert any(f["type"] == "partial" and f["text"].startswith("re:") for f in shown)
    assert [m.text for m in messages if m.role == "assistant"] == [FALLBACK_MESSAGE]
    [turn] = turns
    assert turn.status == "failed" and "stream_broken" in (turn.error or "")
    assert len(model.calls) > 1  # retried before giving up
