"""The Anthropic provider streaming from a local server that sends Messages stream events."""

from __future__ import annotations

import httpx
import pytest

from context import Window
from gateway.providers import ProviderError, RetryPolicy, Usage
from tests.gateway.providers.conftest import Shown, StartAt
from tests.gateway.providers.vendor import (
    WHOLE,
    Step,
    anthropic_error,
    anthropic_reply,
    anthropic_stream,
    sse,
)
from tests.support.providers import ANTHROPIC_KEY, anthropic_provider


def error_event(kind: str, message: str) -> str:
    return sse(anthropic_error(message, kind), "error")


async def test_text_arrives_accumulated_and_in_order_with_usage_from_the_stream(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    events = anthropic_stream(input_tokens=21, output_tokens=45, cache_creation=200)
    vendor, base = await start_anthropic(then=Step(events=events))
    shown = Shown()

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert shown.texts == ["Seu pedido", "Seu pedido 4471 saiu", WHOLE]
    assert completion.text == WHOLE
    assert completion.provider == "anthropic"
    assert completion.model == "claude-sonnet-4-5-20250929"
    assert completion.finish_reason == "end_turn"
    # as without streaming: the prompt counts the cache reads and writes, output comes last
    assert completion.usage == Usage(prompt_tokens=2021, completion_tokens=45, cached_tokens=1800)
    [request] = vendor.received
    assert request.body["stream"] is True
    assert request.body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["x-api-key"] == ANTHROPIC_KEY


async def test_without_on_text_the_request_does_not_stream(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply()))

    completion = await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    assert "stream" not in vendor.received[0].body
    assert completion.text == WHOLE


async def test_a_stream_cut_mid_way_is_retried_and_only_the_retried_text_returned(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    partial = anthropic_stream(["Um momento", ", vou verificar"])[:5]  # start, block, ping, 2
    vendor, base = await start_anthropic(
        [Step(events=partial, drop=True)], then=Step(events=anthropic_stream())
    )
    shown = Shown()

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert shown.texts == [
        "Um momento",
        "Um momento, vou verificar",
        "Seu pedido",
        "Seu pedido 4471 saiu",
        WHOLE,
    ]
    assert (completion.text, completion.attempts) == (WHOLE, 2)
    assert len(vendor.received) == 2


async def test_a_stream_without_message_stop_fails_after_the_attempts(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    no_stop = anthropic_stream()[:-1]  # even the stop reason came, but not message_stop
    vendor, base = await start_anthropic(then=Step(events=no_stop))

    with pytest.raises(ProviderError) as caught:
        await anthropic_provider(http, base, retry=RetryPolicy(3, 0.01, 0.02)).complete(
            window.messages, max_tokens=800, on_text=Shown()
        )

    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("stream_broken", 200, 3)
    assert error.detail == "the stream ended before its end marker"
    assert len(vendor.received) == 3


async def test_an_overloaded_error_event_is_retried(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    overloaded = [*anthropic_stream()[:4], error_event("overloaded_error", "Overloaded")]
    vendor, base = await start_anthropic(
        [Step(events=overloaded)], then=Step(events=anthropic_stream())
    )
    shown = Shown()

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert (completion.text, completion.attempts) == (WHOLE, 2)
    assert shown.texts[0] == shown.texts[1] == "Seu pedido"  # once per attempt
    assert len(vendor.received) == 2


async def test_an_overloaded_error_event_on_every_attempt_is_a_server_error(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    overloaded = [*anthropic_stream()[:2], error_event("overloaded_error", "Overloaded")]
    _, base = await start_anthropic(then=Step(events=overloaded))

    with pytest.raises(ProviderError) as caught:
        await anthropic_provider(http, base, retry=RetryPolicy(2, 0.01)).complete(
            window.messages, max_tokens=800, on_text=Shown()
        )

    error = caught.value
    assert (error.reason, error.status, error.attempts, error.detail) == (
        "server_error",
        200,
        2,
        "Overloaded",
    )


async def test_an_invalid_request_error_event_is_final(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    refused = [*anthropic_stream()[:1], error_event("invalid_request_error", "prompt is too long")]
    vendor, base = await start_anthropic(then=Step(events=refused))

    with pytest.raises(ProviderError) as caught:
        await anthropic_provider(http, base).complete(
            window.messages, max_tokens=800, on_text=Shown()
        )

    assert (caught.value.reason, caught.value.attempts) == ("client_error", 1)
    assert caught.value.detail == "prompt is too long"
    assert len(vendor.received) == 1


async def test_a_529_before_the_stream_is_retried(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(
        [Step(529, anthropic_error("Overloaded", "overloaded_error"))],
        then=Step(events=anthropic_stream()),
    )

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=Shown()
    )

    assert (completion.text, completion.attempts, len(vendor.received)) == (WHOLE, 2, 2)


async def test_unknown_events_are_skipped(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    events = anthropic_stream()
    later = sse({"type": "content_block_annotation", "index": 0}, "content_block_annotation")
    _, base = await start_anthropic(then=Step(events=[*events[:3], later, *events[3:]]))

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=Shown()
    )

    assert completion.text == WHOLE


async def test_a_raising_callback_does_not_break_the_call(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    _, base = await start_anthropic(then=Step(events=anthropic_stream()))
    calls: list[str] = []

    async def broken(text: str) -> None:
        calls.append(text)
        raise ConnectionResetError("the visitor left")

    completion = await anthropic_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=broken
    )

    assert completion.text == WHOLE and completion.attempts == 1
    assert calls == ["Seu pedido"]
