"""The OpenAI-compatible provider streaming from a local server that sends server-sent events."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest

from context import ChatMessage, Window
from gateway.providers import (
    FALLBACK_MESSAGE,
    ProviderError,
    RetryPolicy,
    Usage,
    answer_or_fallback,
)
from tests.gateway.providers.conftest import Shown, StartAt
from tests.gateway.providers.vendor import (
    WHOLE,
    Step,
    openai_error,
    openai_reply,
    openai_stream,
    sse,
)
from tests.support.providers import OPENAI_KEY, openai_provider


async def test_text_arrives_accumulated_and_in_order(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(events=openai_stream()))
    shown = Shown()

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert shown.texts == ["Seu pedido", "Seu pedido 4471 saiu", WHOLE]
    assert completion.text == WHOLE
    assert completion.model == "gpt-4o-mini-2024-07-18"  # as the stream named it
    assert completion.usage == Usage(prompt_tokens=2006, completion_tokens=300, cached_tokens=1920)
    assert (completion.finish_reason, completion.attempts) == ("stop", 1)
    [request] = vendor.received
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["messages"][-1]["content"] == "Meu pedido 4471 não chegou"
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"


async def test_without_on_text_the_request_does_not_stream(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply()))

    completion = await openai_provider(http, base).complete(window.messages, max_tokens=800)

    [request] = vendor.received
    assert "stream" not in request.body and "stream_options" not in request.body
    assert request.headers["accept"] == "application/json"
    assert completion.text == WHOLE


async def test_a_stream_cut_mid_way_is_retried_and_only_the_retried_text_returned(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    partial = openai_stream(["Um momento", ", vou verificar"])[:3]  # role chunk and two pieces
    vendor, base = await start_openai(
        [Step(events=partial, drop=True)], then=Step(events=openai_stream())
    )
    shown = Shown()

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert shown.texts == [
        "Um momento",
        "Um momento, vou verificar",
        "Seu pedido",  # the retry starts from empty: shorter than what was shown before
        "Seu pedido 4471 saiu",
        WHOLE,
    ]
    assert completion.text == WHOLE
    assert completion.attempts == 2
    assert len(vendor.received) == 2
    assert vendor.received[0].body == vendor.received[1].body


@pytest.mark.parametrize(
    ("step", "detail"),
    [
        (Step(events=openai_stream()[:3], drop=True), "the connection dropped mid-stream"),
        (Step(events=openai_stream()[:3]), "the stream ended before its end marker"),
        (Step(events=[*openai_stream()[:2], sse("{not json")]), "an event is not JSON"),
    ],
    ids=["dropped", "ended-early", "not-json"],
)
async def test_a_stream_broken_on_every_attempt_fails_after_the_attempts(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window, step: Step, detail: str
) -> None:
    vendor, base = await start_openai(then=step)
    shown = Shown()

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base, retry=RetryPolicy(3, 0.01, 0.02)).complete(
            window.messages, max_tokens=800, on_text=shown
        )

    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("stream_broken", 200, 3)
    assert error.detail.startswith(detail)
    assert len(vendor.received) == 3
    assert shown.texts.count("Seu pedido") == 3  # each attempt started the text again


async def test_a_finish_reason_without_done_is_a_whole_reply(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    without_done = openai_stream()[:-1]  # some compatible servers end the body after usage
    _, base = await start_openai(then=Step(events=without_done))

    completion = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=Shown()
    )

    assert (completion.text, completion.attempts, completion.usage.prompt_tokens) == (
        WHOLE,
        1,
        2006,
    )


async def test_429_before_the_stream_waits_its_retry_after(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(
        [Step(429, openai_error("Rate limit reached", "requests"), {"Retry-After": "0.3"})],
        then=Step(events=openai_stream()),
    )
    shown = Shown()

    started = time.monotonic()
    completion = await openai_provider(
        http, base, retry=RetryPolicy(attempts=2, base_delay_s=0.0, max_delay_s=1.0)
    ).complete(window.messages, max_tokens=800, on_text=shown)

    assert time.monotonic() - started >= 0.3  # jitter alone would not have waited (base 0)
    assert completion.attempts == 2 and len(vendor.received) == 2
    assert shown.texts[-1] == WHOLE


async def test_a_400_before_the_stream_is_final(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(
        then=Step(400, openai_error("Unknown parameter: 'stream_options'."))
    )

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base).complete(window.messages, max_tokens=800, on_text=Shown())

    assert (caught.value.reason, caught.value.status, caught.value.attempts) == (
        "client_error",
        400,
        1,
    )
    assert caught.value.detail == "Unknown parameter: 'stream_options'."
    assert len(vendor.received) == 1


async def test_an_error_chunk_fails_the_attempt_and_is_retried(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    failing = [*openai_stream()[:2], sse(openai_error("The model crashed", "server_error"))]
    vendor, base = await start_openai(then=Step(events=failing))

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base, retry=RetryPolicy(2, 0.01, 0.01)).complete(
            window.messages, max_tokens=800, on_text=Shown()
        )

    assert (caught.value.reason, caught.value.attempts) == ("server_error", 2)
    assert caught.value.detail == "The model crashed"
    assert len(vendor.received) == 2


async def test_a_raising_callback_is_dropped_and_the_call_still_finishes(
    http: httpx.AsyncClient,
    start_openai: StartAt,
    window: Window,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, base = await start_openai(then=Step(events=openai_stream()))
    seen: list[str] = []

    async def flaky(text: str) -> None:
        seen.append(text)
        if len(seen) == 2:
            raise RuntimeError("socket closed")

    with caplog.at_level(logging.WARNING, "relaydesk.providers"):
        completion = await openai_provider(http, base).complete(
            window.messages, max_tokens=800, on_text=flaky
        )

    assert completion.text == WHOLE and completion.attempts == 1
    assert seen == ["Seu pedido", "Seu pedido 4471 saiu"]  # not called after it raised
    [record] = [r for r in caplog.records if "on_text" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is not None


async def test_a_silent_gap_between_events_times_out_and_is_retried(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    stalled = Step(events=openai_stream()[:2], stall_s=5.0)
    vendor, base = await start_openai([stalled], then=Step(events=openai_stream()))
    shown = Shown()

    completion = await openai_provider(http, base, timeout_s=0.3).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert completion.attempts == 2 and completion.text == WHOLE
    assert shown.texts == ["Seu pedido", "Seu pedido", "Seu pedido 4471 saiu", WHOLE]
    assert len(vendor.received) == 2


async def test_a_silent_gap_on_every_attempt_is_a_timeout(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(events=openai_stream()[:2], stall_s=5.0))

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base, timeout_s=0.2, retry=RetryPolicy(2, 0.01)).complete(
            window.messages, max_tokens=800, on_text=Shown()
        )

    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("timeout", 200, 2)
    assert error.detail == "no event within 0.2 s"


async def test_a_stream_longer_than_the_timeout_is_fine_while_events_keep_coming(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    pieces = [f"{n} " for n in range(8)]
    steady = Step(events=openai_stream(pieces), gap_s=0.15)  # about 1.8 s in all
    _, base = await start_openai(then=steady)

    completion = await openai_provider(http, base, timeout_s=0.6, retry=RetryPolicy(1)).complete(
        window.messages, max_tokens=800, on_text=Shown()
    )

    assert completion.text == "".join(pieces) and completion.attempts == 1


async def test_a_slow_callback_does_not_count_against_the_vendor(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(events=openai_stream()))

    async def slow_display(text: str) -> None:
        await asyncio.sleep(0.4)

    completion = await openai_provider(http, base, timeout_s=0.3, retry=RetryPolicy(1)).complete(
        window.messages, max_tokens=800, on_text=slow_display
    )

    assert completion.text == WHOLE and completion.attempts == 1


async def test_a_server_that_answers_a_stream_request_in_one_json_body_is_read_whole(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    """Some OpenAI-compatible servers ignore ``stream: true``: their answer still counts."""
    vendor, base = await start_openai(then=Step(body=openai_reply(prompt=120, completion=9)))
    shown = Shown()

    done = await openai_provider(http, base).complete(
        window.messages, max_tokens=800, on_text=shown
    )

    assert done.text == WHOLE and shown.texts == [WHOLE]  # told once, whole
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (120, 9)
    assert len(vendor.received) == 1


async def test_a_2xx_that_is_neither_a_stream_nor_json_is_refused(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(raw="<html>maintenance</html>"))

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base).complete(window.messages, max_tokens=800, on_text=Shown())

    assert (caught.value.reason, caught.value.attempts) == ("invalid_response", 1)
    assert "text/event-stream" in caught.value.detail
    assert len(vendor.received) == 1


async def test_a_whole_stream_without_text_is_refused(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(events=openai_stream([])))

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base).complete(window.messages, max_tokens=800, on_text=Shown())

    assert (caught.value.reason, caught.value.attempts) == ("invalid_response", 1)
    assert caught.value.detail == "no text in the reply (finish_reason='stop')"


async def test_the_fallback_after_a_broken_stream_replaces_what_was_shown(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(events=openai_stream()[:2], drop=True))
    shown = Shown()

    outcome = await answer_or_fallback(
        openai_provider(http, base, retry=RetryPolicy(1)),
        [ChatMessage("user", "oi")],
        max_tokens=50,
        on_text=shown,
    )

    assert shown.texts == ["Seu pedido"]
    assert outcome.reply == FALLBACK_MESSAGE and outcome.completion is None
    assert outcome.failure is not None and outcome.failure.reason == "stream_broken"
