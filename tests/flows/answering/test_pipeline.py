"""The pipeline end to end over real sockets, on the embedded and the production backends:
ack before the model, dedupe under concurrent replays, per-conversation order, fallback,
and no accepted message lost across a restart."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from sqlalchemy import func, select

from gateway.storage.models import Message, TurnRow
from gateway.storage.repositories import tenants
from gateway.turns.answer.canned_texts import FALLBACK_MESSAGES
from tests.support.openai_server import FakeOpenAI
from tests.support.stack import Stack, database_url, running_stack
from tests.support.webchat import signed_visitor

# Serial: each acknowledgement is timed (under 2 s).
pytestmark = pytest.mark.serial

BACKENDS = ["embedded", "production"]


@pytest.fixture
async def model() -> FakeOpenAI:
    return FakeOpenAI()


@pytest.fixture
async def model_url(model: FakeOpenAI):  # type: ignore[no-untyped-def]
    server = TestServer(model.app())
    await server.start_server()
    yield str(server.make_url("/v1"))
    model.release()
    await server.close()


def _model_settings(url: str) -> dict[str, object]:
    return {"RELAYDESK_MODEL": "openai:test-model", "RELAYDESK_MODEL_BASE_URL": url}


async def _post(stack: Stack, visitor: str, text: str, client_id: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    response = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": text, "client_message_id": client_id},
    )
    return response.status, await response.json()


async def _count(stack: Stack, model_class, *where) -> int:  # type: ignore[no-untyped-def]
    async with stack.sessions()() as session:
        return int(
            await session.scalar(select(func.count()).select_from(model_class).where(*where))
        )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_round_trip_stores_reply_and_usage(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    async with running_stack(backend, tmp_path, **_model_settings(model_url)) as stack:
        visitor = await signed_visitor(stack.client)
        status, body = await _post(stack, visitor, "Onde está meu pedido?", "c1")
        assert status == 202 and body["duplicate"] is False
        await stack.idle()
        listed = await (
            await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        ).json()
        assert [(m["role"], m["text"]) for m in listed["messages"]] == [
            ("user", "Onde está meu pedido?"),
            ("assistant", "re: Onde está meu pedido?"),
        ]
        assert model.calls[0].messages[0]["role"] == "system"
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None
        assert (turn.status, turn.prompt_tokens, turn.completion_tokens) == ("done", 100, 7)
        assert turn.report is not None and turn.report["estimated_tokens"] > 0
        assert turn.delivery_status == "sent"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_ack_is_fast_while_the_model_is_slow(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    model.delay_s = 30.0
    async with running_stack(backend, tmp_path, **_model_settings(model_url)) as stack:
        visitor = await signed_visitor(stack.client)
        timings = []
        for index in range(3):
            started = time.monotonic()
            status, _ = await _post(stack, visitor, f"mensagem {index}", f"c{index}")
            timings.append(time.monotonic() - started)
            assert status == 202
        await asyncio.sleep(0.2)
        assert len(model.calls) == 1  # the first turn is with the model; the rest wait in order
        assert max(timings) < 2.0
        assert await _count(stack, Message, Message.role == "user") == 3
        model.release()
        await stack.idle()
        assert await _count(stack, Message, Message.role == "assistant") == 3


@pytest.mark.parametrize("backend", BACKENDS)
async def test_50_concurrent_replays_store_one_row_one_call_one_reply(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    async with running_stack(backend, tmp_path, **_model_settings(model_url)) as stack:
        # Replays count against the visitor's rate limit (20 a minute): lifted, this is dedupe.
        async with stack.sessions().begin() as session:
            await tenants.save_tenant_settings(
                session,
                domain="default",
                settings={"rate_limits": {"webchat_messages_per_visitor": None}},
            )
        visitor = await signed_visitor(stack.client)
        results = await asyncio.gather(
            *(_post(stack, visitor, "mesma mensagem", "same-id") for _ in range(50))
        )
        assert {status for status, _ in results} == {202}
        assert len({body["message_id"] for _, body in results}) == 1
        assert sum(1 for _, body in results if not body["duplicate"]) == 1
        await stack.idle()
        assert await _count(stack, Message, Message.role == "user") == 1
        assert await _count(stack, Message, Message.role == "assistant") == 1
        assert len(model.calls) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_one_conversation_in_order_while_another_runs_in_parallel(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    model.delay_s = 0.05
    rng = random.Random(7)
    async with running_stack(backend, tmp_path, **_model_settings(model_url)) as stack:
        first, second = await signed_visitor(stack.client), await signed_visitor(stack.client)
        accepted: list[tuple[int, str]] = []

        async def send(visitor: str, index: int) -> None:
            await asyncio.sleep(rng.uniform(0, 0.3))
            status, body = await _post(stack, visitor, f"{visitor[:6]}-{index}", f"m{index}")
            assert status == 202
            if visitor == first:
                accepted.append((int(body["message_id"]), f"{visitor[:6]}-{index}"))

        order = list(range(10))
        rng.shuffle(order)
        await asyncio.gather(*(send(first, i) for i in order), *(send(second, i) for i in range(3)))
        await stack.idle()
        a_calls = [c for c in model.calls if c.last_user_text.startswith(first[:6])]
        b_calls = [c for c in model.calls if c.last_user_text.startswith(second[:6])]
        assert [c.last_user_text for c in a_calls] == [text for _, text in sorted(accepted)]
        # Turns of one conversation never overlap; the other conversation ran meanwhile.
        for earlier, later in zip(a_calls, a_calls[1:], strict=False):
            assert earlier.finished is not None and earlier.finished <= later.started
        last_a = max(c.finished or 0 for c in a_calls)
        assert any(c.started < last_a for c in b_calls)
        # Each window holds the conversation's earlier turns, not later ones.
        last_window = " ".join(m["content"] for m in a_calls[-1].messages)
        assert all(text in last_window for _, text in sorted(accepted))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_model_failure_sends_the_fallback_and_keeps_the_message(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    model.status = 400  # not retryable: fails at once
    async with running_stack(backend, tmp_path, **_model_settings(model_url)) as stack:
        visitor = await signed_visitor(stack.client)
        await _post(stack, visitor, "oi", "c1")
        await stack.idle()
        listed = await (
            await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
        ).json()
        assert [m["role"] for m in listed["messages"]] == ["user", "assistant"]
        # Not an echo of the message: the fallback, in the customer's language.
        assert listed["messages"][1]["text"] == FALLBACK_MESSAGES["pt"]
        async with stack.sessions()() as session:
            turn = await session.scalar(select(TurnRow))
        assert turn is not None and turn.status == "failed" and turn.error


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_accepted_message_survives_a_restart(
    backend: str, tmp_path: Path, model: FakeOpenAI, model_url: str
) -> None:
    model.delay_s = 30.0
    async with database_url(backend, tmp_path) as url:
        async with running_stack(
            backend, tmp_path, database=url, **_model_settings(model_url)
        ) as stack:
            visitor = await signed_visitor(stack.client)
            status, _ = await _post(stack, visitor, "antes da queda", "c1")
            assert status == 202
            await asyncio.sleep(0.1)
        # The process went away mid-turn; a new one picks the pending turn up.
        model.release()
        model.delay_s = 0.0
        async with running_stack(
            backend, tmp_path, database=url, **_model_settings(model_url)
        ) as stack:
            await stack.idle()
            listed = await (
                await stack.client.get("/webchat/messages", params={"visitor_id": visitor})
            ).json()
            assert [m["text"] for m in listed["messages"]] == [
                "antes da queda",
                "re: antes da queda",
            ]


async def test_malformed_and_oversized_web_chat_bodies(tmp_path: Path) -> None:
    async with running_stack("embedded", tmp_path, RELAYDESK_MAX_BODY_BYTES=4096) as stack:
        bad = await stack.client.post("/webchat/messages", data=b"{nope")
        assert bad.status == 400 and (await bad.json())["error"] == "invalid_payload"
        visitor = await signed_visitor(stack.client)
        missing = await stack.client.post("/webchat/messages", json={"visitor_id": visitor})
        assert missing.status == 400
        short_visitor = await stack.client.post(
            "/webchat/messages", json={"visitor_id": "x", "text": "oi", "client_message_id": "1"}
        )
        assert short_visitor.status == 400
        huge = await stack.client.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": "x" * 10_000, "client_message_id": "1"},
        )
        assert huge.status == 413
        assert await _count(stack, Message) == 0
