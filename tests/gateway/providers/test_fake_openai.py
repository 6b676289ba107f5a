"""The shared fake model of the pipeline tests (`tests.support.openai_server.FakeOpenAI`) in
its streaming mode, driven through the real provider: later tests of the answering code rely on
its pacing and its in-flight counts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from context import ChatMessage
from gateway.providers import OpenAICompatProvider, RetryPolicy, Usage
from tests.gateway.providers.conftest import Shown
from tests.support.openai_server import FakeOpenAI

ONE_TRY = RetryPolicy(attempts=1)


@pytest.fixture
async def fake() -> FakeOpenAI:
    return FakeOpenAI(streaming=True, reply="Seu pedido 4471 saiu hoje.", tokens_per_s=200)


@pytest.fixture
async def base(fake: FakeOpenAI) -> AsyncIterator[str]:
    async with fake.serving() as url:
        yield url


def model(http: httpx.AsyncClient, base: str) -> OpenAICompatProvider:
    return OpenAICompatProvider(http=http, model="test-model", base_url=base, retry=ONE_TRY)


async def test_a_streamed_request_gets_the_reply_token_by_token(
    http: httpx.AsyncClient, fake: FakeOpenAI, base: str
) -> None:
    fake.tokens_per_s = 20  # a token every 50 ms after the first
    shown = Shown()

    completion = await model(http, base).complete(
        [ChatMessage("user", "oi")], max_tokens=50, on_text=shown
    )

    assert shown.texts == [
        "Seu",
        "Seu pedido",
        "Seu pedido 4471",
        "Seu pedido 4471 saiu",
        "Seu pedido 4471 saiu hoje.",
    ]
    assert completion.usage == Usage(prompt_tokens=100, completion_tokens=5)
    assert completion.model == "test-model" and completion.finish_reason == "stop"
    [call] = fake.calls
    assert call.streamed and call.first_token is not None and call.finished is not None
    assert call.started <= call.first_token <= call.finished
    assert call.finished - call.first_token >= 4 / 20  # paced, not sent at once


async def test_a_plain_request_still_gets_one_json_answer(
    http: httpx.AsyncClient, fake: FakeOpenAI, base: str
) -> None:
    completion = await model(http, base).complete([ChatMessage("user", "oi")], max_tokens=50)

    assert completion.text == "Seu pedido 4471 saiu hoje."
    assert completion.usage == Usage(prompt_tokens=100, completion_tokens=7)
    assert not fake.calls[0].streamed


async def test_in_flight_requests_and_their_peak_are_counted(
    http: httpx.AsyncClient, base: str, fake: FakeOpenAI
) -> None:
    fake.first_token_s = 30.0  # held until released: all three are in flight together
    provider = model(http, base)
    calls = [
        asyncio.create_task(
            provider.complete([ChatMessage("user", f"oi {n}")], max_tokens=9, on_text=Shown())
        )
        for n in range(3)
    ]
    while fake.in_flight < 3:
        await asyncio.sleep(0.01)
    assert all(call.first_token is None for call in fake.calls)  # headers sent, no text yet

    fake.release()
    completions = await asyncio.gather(*calls)

    assert [c.text for c in completions] == ["Seu pedido 4471 saiu hoje."] * 3
    assert (fake.in_flight, fake.peak_in_flight) == (0, 3)


async def test_without_streaming_mode_a_stream_request_gets_json_as_before(
    http: httpx.AsyncClient,
) -> None:
    plain = FakeOpenAI()
    async with plain.serving() as url:
        shown = Shown()
        done = await model(http, url).complete(
            [ChatMessage("user", "oi")], max_tokens=9, on_text=shown
        )
        assert shown.texts == [done.text] == ["re: oi"]  # JSON, read whole
        assert not plain.calls[0].streamed and plain.peak_in_flight == 1
