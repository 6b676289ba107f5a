"""Web chat replies streamed as the model writes them: a typing signal while the model thinks,
partial frames growing on the visitor's socket, one final frame with the stored message — and
a stream that breaks on every attempt ends with the fallback message, never a half reply stored
as final. The model is a local OpenAI-compatible server streaming server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from gateway.storage.models import Message, TurnRow
from gateway.turns.answer.canned_texts import FALLBACK_MESSAGES
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.shared_gateways import next_frame
from tests.support.stack import Stack, running_stack
from tests.support.tenant_settings import save_domain_settings
from tests.support.webchat import signed_visitor


@dataclass
class _Exchange:
    """One visitor's message on a running gateway: the frames up to the stored reply's, and
    once the socket is closed, the rows stored."""

    stack: Stack
    visitor: str
    frames: list[dict[str, Any]]
    messages: list[Message] = field(default_factory=list)
    turns: list[TurnRow] = field(default_factory=list)


@asynccontextmanager
async def _exchange(
    model: FakeOpenAI, tmp_path: Path, text: str, **tenant: object
) -> AsyncIterator[_Exchange]:
    """A gateway answering with `model` (`tenant`: the domain's tenant settings); a web chat
    visitor says `text` and reads the frames up to the stored reply's. On leaving: the socket
    closed, the rows read, the gateway stopped."""
    async with (
        model.serving() as model_url,
        running_stack("embedded", tmp_path, **model_settings(model_url)) as stack,
    ):
        if tenant:
            await save_domain_settings(stack, **tenant)
        visitor = await signed_visitor(stack.client)
        socket = await stack.client.ws_connect("/webchat/ws")
        await socket.send_json({"type": "hello", "visitor_id": visitor, "after": None})
        assert (await next_frame(socket))["type"] == "ready"
        await socket.send_json({"type": "message", "text": text, "client_message_id": "m1"})
        assert (await next_frame(socket))["type"] == "ack"
        frames = [await next_frame(socket, timeout=20)]
        while frames[-1]["type"] != "message":
            frames.append(await next_frame(socket, timeout=20))
        exchange = _Exchange(stack, visitor, frames)
        yield exchange
        await socket.close()
        async with stack.sessions()() as session:
            ordered = select(Message).order_by(Message.id)
            exchange.messages = list((await session.scalars(ordered)).all())
            exchange.turns = list((await session.scalars(select(TurnRow))).all())


async def test_a_reply_grows_on_the_socket_and_only_the_finished_one_is_stored(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI(streaming=True, first_token_s=0.4, tokens_per_s=40)
    async with _exchange(model, tmp_path, "Onde está meu pedido 4471?") as exchange:
        *shown, final = exchange.frames
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
        response = await exchange.stack.client.get(
            "/webchat/messages", params={"visitor_id": exchange.visitor}
        )
        listed = (await response.json())["messages"]
        assert [(m["role"], m["text"]) for m in listed] == [
            ("user", "Onde está meu pedido 4471?"),
            ("assistant", expected),
        ]
    assert [m.text for m in exchange.messages if m.role == "assistant"] == [expected]
    [turn] = exchange.turns
    assert turn.status == "done"
    assert turn.prompt_tokens == 100 and turn.completion_tokens > 0  # read from the stream
    assert model.calls[0].streamed


async def test_a_stream_broken_on_every_attempt_ends_with_the_fallback_not_half_a_reply(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI(streaming=True, tokens_per_s=200, break_after_pieces=2)
    async with _exchange(model, tmp_path, "Qual o prazo de entrega do pedido?") as exchange:
        pass  # nothing to ask the gateway while it runs: all is in the frames and the rows
    *shown, final = exchange.frames
    assert final["text"] == FALLBACK_MESSAGES["pt"]  # the customer's language
    # What was shown while it streamed was a beginning of the model's text, never stored.
    assert any(f["type"] == "partial" and f["text"].startswith("re:") for f in shown)
    assert [m.text for m in exchange.messages if m.role == "assistant"] == [FALLBACK_MESSAGES["pt"]]
    [turn] = exchange.turns
    assert turn.status == "failed" and "stream_broken" in (turn.error or "")
    assert len(model.calls) > 1  # retried before giving up


async def test_a_media_marker_never_shows_while_the_reply_is_written(tmp_path: Path) -> None:
    catalogue = "https://cdn.example.org/catalogo.pdf"
    model = FakeOpenAI(
        streaming=True,
        tokens_per_s=200,
        reply=f"Segue o catálogo [[media: {catalogue} | Catálogo]] de verão.",
    )
    hosts = ["cdn.example.org"]
    async with _exchange(model, tmp_path, "tem catálogo?", media_hosts=hosts) as exchange:
        *shown, final = exchange.frames
        partials = [frame["text"] for frame in shown if frame["type"] == "partial"]
        assert len(partials) >= 2, shown
        assert not any("[[" in text or "media" in text for text in partials)
        assert final["text"] == "Segue o catálogo de verão."
        assert final["media"][0]["url"] == catalogue
