"""The Anthropic provider against a local server speaking the Messages API."""

from __future__ import annotations

import httpx
import pytest

from context import ChatMessage, Window
from gateway.providers import (
    ANTHROPIC_VERSION,
    ProviderError,
    RetryPolicy,
    Usage,
)
from gateway.providers.anthropic import LEADING_USER_TEXT, anthropic_payload
from tests.gateway.providers.conftest import SHARED_HEADER, StartAt
from tests.gateway.providers.vendor import ANTHROPIC_PATH, Step, anthropic_error, anthropic_reply
from tests.support.providers import ANTHROPIC_KEY, anthropic_provider

MODEL = "claude-sonnet-4-5"


async def test_system_prefix_is_a_cached_block_and_turns_follow(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply()))

    await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    [request] = vendor.received
    assert request.path == ANTHROPIC_PATH
    system, *turns = window.messages
    assert request.body == {
        "model": MODEL,
        "max_tokens": 800,
        "system": [
            {"type": "text", "text": system.content, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": m.role, "content": m.content} for m in turns],
    }
    assert request.headers["x-api-key"] == ANTHROPIC_KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers
    assert request.headers[SHARED_HEADER] == "yes"


async def test_the_cached_prefix_is_byte_identical_between_turns(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply()))
    claude = anthropic_provider(http, base)
    next_turn = (
        *window.messages[:-1],
        window.messages[-1],
        ChatMessage("assistant", "Vou verificar."),
        ChatMessage("user", "Obrigada"),
    )

    await claude.complete(window.messages, max_tokens=800)
    await claude.complete(next_turn, max_tokens=800)

    first, second = (r.body["system"] for r in vendor.received)
    assert first == second


async def test_usage_counts_cache_reads_and_writes_into_the_prompt(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    body = anthropic_reply(input_tokens=21, output_tokens=45, cache_read=1800, cache_creation=200)
    _, base = await start_anthropic(then=Step(body=body))

    completion = await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    assert completion.text == "Seu pedido 4471 saiu para entrega hoje."
    assert completion.provider == "anthropic"
    assert completion.model == "claude-sonnet-4-5-20250929"
    assert completion.finish_reason == "end_turn"
    assert completion.usage == Usage(prompt_tokens=2021, completion_tokens=45, cached_tokens=1800)


async def test_usage_with_null_cache_fields(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    body = anthropic_reply(input_tokens=300, output_tokens=12, cache_read=None, cache_creation=None)
    _, base = await start_anthropic(then=Step(body=body))

    completion = await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    assert completion.usage == Usage(prompt_tokens=300, completion_tokens=12, cached_tokens=0)


async def test_retries_429_then_529_then_answers(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(
        [
            Step(429, anthropic_error("rate limited", "rate_limit_error"), {"retry-after": "0"}),
            Step(529, anthropic_error("Overloaded", "overloaded_error")),
        ],
        then=Step(body=anthropic_reply()),
    )

    completion = await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    assert completion.attempts == 3
    assert len(vendor.received) == 3
    assert completion.usage.cached_tokens == 1800


async def test_400_is_not_retried_and_names_the_vendor_message(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(
        then=Step(400, anthropic_error("messages: roles must alternate"))
    )

    with pytest.raises(ProviderError) as caught:
        await anthropic_provider(http, base).complete(window.messages, max_tokens=800)

    assert len(vendor.received) == 1
    error = caught.value
    assert (error.provider, error.reason, error.status, error.attempts) == (
        "anthropic",
        "client_error",
        400,
        1,
    )
    assert error.detail == "messages: roles must alternate"


async def test_timeout_raises_after_the_attempts(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply(), hang_s=5.0))

    with pytest.raises(ProviderError) as caught:
        await anthropic_provider(http, base, timeout_s=0.2, retry=RetryPolicy(2, 0.01)).complete(
            window.messages, max_tokens=800
        )

    assert len(vendor.received) == 2
    assert (caught.value.reason, caught.value.status, caught.value.attempts) == ("timeout", None, 2)


async def test_a_base_url_ending_in_v1_is_accepted(
    http: httpx.AsyncClient, start_anthropic: StartAt, window: Window
) -> None:
    vendor, base = await start_anthropic(then=Step(body=anthropic_reply()))

    await anthropic_provider(http, base + "/v1/").complete(window.messages, max_tokens=800)

    assert vendor.received[0].path == ANTHROPIC_PATH


# --- request shape, pure ------------------------------------------------------------------------


def test_consecutive_same_role_messages_are_merged() -> None:
    payload = anthropic_payload(
        MODEL,
        [
            ChatMessage("system", "rules"),
            ChatMessage("user", "oi"),
            ChatMessage("user", "meu pedido"),
            ChatMessage("assistant", "qual?"),
            ChatMessage("assistant", "pode repetir?"),
            ChatMessage("user", "4471"),
        ],
        max_tokens=10,
    )
    assert payload["messages"] == [
        {"role": "user", "content": "oi\n\nmeu pedido"},
        {"role": "assistant", "content": "qual?\n\npode repetir?"},
        {"role": "user", "content": "4471"},
    ]


def test_a_history_opening_with_the_assistant_gets_a_user_turn_first() -> None:
    payload = anthropic_payload(
        MODEL,
        [
            ChatMessage("system", "rules"),
            ChatMessage("assistant", "Olá! Temos uma promoção."),
            ChatMessage("user", "Quero saber mais"),
        ],
        max_tokens=10,
    )
    assert payload["messages"] == [
        {"role": "user", "content": LEADING_USER_TEXT},
        {"role": "assistant", "content": "Olá! Temos uma promoção."},
        {"role": "user", "content": "Quero saber mais"},
    ]


def test_only_the_first_system_block_is_marked_for_caching() -> None:
    payload = anthropic_payload(
        MODEL,
        [ChatMessage("system", "prefix"), ChatMessage("user", "oi"), ChatMessage("system", "late")],
        max_tokens=10,
    )
    assert payload["system"] == [
        {"type": "text", "text": "prefix", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "late"},
    ]
    assert payload["messages"] == [{"role": "user", "content": "oi"}]


def test_empty_messages_are_left_out_and_no_system_means_no_system_field() -> None:
    payload = anthropic_payload(
        MODEL, [ChatMessage("system", " "), ChatMessage("user", "oi")], max_tokens=10
    )
    assert "system" not in payload
    assert payload["messages"] == [{"role": "user", "content": "oi"}]
    with pytest.raises(ValueError):
        anthropic_payload(MODEL, [ChatMessage("system", "only rules")], max_tokens=10)
