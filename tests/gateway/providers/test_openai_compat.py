"""The OpenAI-compatible provider against a local server speaking chat completions."""

from __future__ import annotations

import socket

import httpx
import pytest

from context import ChatMessage, Window
from gateway.providers import (
    FALLBACK_MESSAGE,
    ProviderError,
    RetryPolicy,
    Usage,
    answer_or_fallback,
    make_provider,
)
from gateway.providers.openai_compat import openai_payload, token_field_for
from tests.gateway.providers.conftest import SHARED_HEADER, StartAt
from tests.gateway.providers.vendor import OPENAI_PATH, Step, openai_error, openai_reply
from tests.support.providers import OPENAI_KEY, openai_provider


async def test_request_carries_the_window_unchanged(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply()))

    await openai_provider(http, base).complete(window.messages, max_tokens=800)

    [request] = vendor.received
    assert request.path == OPENAI_PATH
    assert request.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": m.role, "content": m.content} for m in window.messages],
        "max_tokens": 800,
    }
    assert request.body["messages"][0]["role"] == "system"
    assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers[SHARED_HEADER] == "yes"  # the injected client made the call


async def test_answer_and_usage_with_cached_tokens(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(body=openai_reply()))

    completion = await openai_provider(http, base).complete(window.messages, max_tokens=800)

    assert completion.text == "Seu pedido 4471 saiu para entrega hoje."
    assert completion.provider == "openai"
    assert completion.model == "gpt-4o-mini-2024-07-18"  # as the server named it
    assert completion.usage == Usage(prompt_tokens=2006, completion_tokens=300, cached_tokens=1920)
    assert completion.attempts == 1
    assert completion.finish_reason == "stop"


async def test_usage_without_cache_details_reads_zero_cached(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    body = openai_reply(prompt=120, completion=9, cached=None)
    _, base = await start_openai(then=Step(body=body))

    completion = await openai_provider(http, base).complete(window.messages, max_tokens=100)

    assert completion.usage == Usage(prompt_tokens=120, completion_tokens=9, cached_tokens=0)


async def test_retries_429_then_500_then_answers(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(
        [
            Step(429, openai_error("Rate limit reached", "requests"), {"Retry-After": "0"}),
            Step(500, openai_error("The server had an error", "server_error")),
        ],
        then=Step(body=openai_reply()),
    )

    completion = await openai_provider(http, base).complete(window.messages, max_tokens=800)

    assert completion.attempts == 3
    assert completion.usage.prompt_tokens == 2006
    assert len(vendor.received) == 3
    assert vendor.received[0].body == vendor.received[2].body  # the same request each time


async def test_gives_up_after_the_policy_attempts(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(503, openai_error("overloaded", "server_error")))

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base, retry=RetryPolicy(3, 0.01, 0.02)).complete(
            window.messages, max_tokens=800
        )

    assert len(vendor.received) == 3
    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("server_error", 503, 3)
    assert error.detail == "overloaded"


async def test_400_is_not_retried(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(
        then=Step(400, openai_error("This model's maximum context length is 8192 tokens."))
    )

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base).complete(window.messages, max_tokens=800)

    assert len(vendor.received) == 1
    error = caught.value
    assert (error.reason, error.status, error.attempts) == ("client_error", 400, 1)
    assert "maximum context length" in error.detail
    assert OPENAI_KEY not in str(error)


async def test_timeout_is_retried_then_the_customer_gets_the_fallback(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply(), hang_s=5.0))
    slow = openai_provider(http, base, timeout_s=0.2, retry=RetryPolicy(2, 0.01, 0.01))

    outcome = await answer_or_fallback(slow, window.messages, max_tokens=800)

    assert len(vendor.received) == 2
    assert outcome.reply == FALLBACK_MESSAGE
    assert outcome.completion is None and outcome.usage is None
    assert outcome.failure is not None
    assert outcome.failure.to_dict() == {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "reason": "timeout",
        "status": None,
        "attempts": 2,
        "detail": "no answer within 0.2 s",
    }


async def test_a_custom_fallback_text_is_used(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(500, {}))

    outcome = await answer_or_fallback(
        openai_provider(http, base, retry=RetryPolicy(1)),
        window.messages,
        max_tokens=800,
        fallback="Estamos com instabilidade.",
    )

    assert outcome.reply == "Estamos com instabilidade."
    assert outcome.failure is not None and outcome.failure.status == 500


async def test_success_outcome_carries_the_usage(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    _, base = await start_openai(then=Step(body=openai_reply()))

    outcome = await answer_or_fallback(openai_provider(http, base), window.messages, max_tokens=800)

    assert outcome.ok and outcome.failure is None
    assert outcome.reply == "Seu pedido 4471 saiu para entrega hoje."
    assert outcome.usage == Usage(2006, 300, 1920)


async def test_connection_refused_is_retried(http: httpx.AsyncClient, window: Window) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(ProviderError) as caught:
        await openai_provider(
            http, f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(2, 0.01)
        ).complete(window.messages, max_tokens=800)

    assert (caught.value.reason, caught.value.attempts) == ("connect_error", 2)


@pytest.mark.parametrize(
    ("step", "detail"),
    [
        (Step(raw="<html>gateway</html>"), "the body is not JSON"),
        (Step(body=openai_reply(text="")), "no text in the reply"),
        (Step(body={"choices": []}), "no text in the reply"),
    ],
)
async def test_unusable_answers_fail_without_retry(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window, step: Step, detail: str
) -> None:
    vendor, base = await start_openai(then=step)

    with pytest.raises(ProviderError) as caught:
        await openai_provider(http, base).complete(window.messages, max_tokens=800)

    assert len(vendor.received) == 1
    assert caught.value.reason == "invalid_response"
    assert caught.value.detail.startswith(detail)


async def test_local_server_without_key_gets_no_authorization(
    http: httpx.AsyncClient, start_openai: StartAt, window: Window
) -> None:
    vendor, base = await start_openai(then=Step(body=openai_reply()))
    local = make_provider("openai:llama3.1:8b", http=http, base_url=base, api_key=None)

    completion = await local.complete(window.messages, max_tokens=64)

    assert "authorization" not in vendor.received[0].headers
    assert vendor.received[0].body["model"] == "llama3.1:8b"
    assert completion.text


def test_openai_itself_gets_max_completion_tokens() -> None:
    assert token_field_for("https://api.openai.com/v1") == "max_completion_tokens"
    assert token_field_for("http://127.0.0.1:11434/v1") == "max_tokens"
    payload = openai_payload(
        "o4-mini", [ChatMessage("user", "oi")], max_tokens=50, token_field="max_completion_tokens"
    )
    assert payload == {
        "model": "o4-mini",
        "messages": [{"role": "user", "content": "oi"}],
        "max_completion_tokens": 50,
    }
