"""Provider specs and `make_provider`."""

from __future__ import annotations

import httpx
import pytest

from gateway.providers import (
    ANTHROPIC_BASE_URL,
    DEFAULT_RETRY,
    OPENAI_BASE_URL,
    AnthropicProvider,
    OfflineProvider,
    OpenAICompatProvider,
    ProviderConfigError,
    ProviderError,
    ProviderSpec,
    RetryPolicy,
    make_provider,
    parse_spec,
)


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("offline", ProviderSpec("offline", "offline")),
        ("openai:gpt-4o-mini", ProviderSpec("openai", "gpt-4o-mini")),
        ("openai:llama3.1:8b", ProviderSpec("openai", "llama3.1:8b")),
        ("anthropic:claude-sonnet-4-5", ProviderSpec("anthropic", "claude-sonnet-4-5")),
    ],
)
def test_parse_spec(spec: str, parsed: ProviderSpec) -> None:
    assert parse_spec(spec) == parsed
    assert str(parsed) == spec


@pytest.mark.parametrize("spec", ["", "openai", "openai:", "gpt-4o", "cohere:command", "offline:x"])
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(ProviderConfigError, match="invalid model spec"):
        parse_spec(spec)


async def test_each_kind_is_built_on_the_shared_client() -> None:
    async with httpx.AsyncClient() as http:
        retry = RetryPolicy(2)
        openai = make_provider(
            "openai:gpt-4o", http=http, base_url=None, api_key="k", timeout_s=12, retry=retry
        )
        claude = make_provider("anthropic:claude-haiku-4-5", http=http, base_url=None, api_key="k")
        offline = make_provider("offline", http=http, base_url=None, api_key=None)

    assert isinstance(openai, OpenAICompatProvider)
    assert (openai.http, openai.base_url, openai.timeout_s, openai.retry) == (
        http,
        OPENAI_BASE_URL,
        12,
        retry,
    )
    assert openai.token_field == "max_completion_tokens"
    assert openai.url == "https://api.openai.com/v1/chat/completions"
    assert isinstance(claude, AnthropicProvider)
    assert (claude.http, claude.base_url, claude.retry) == (http, ANTHROPIC_BASE_URL, DEFAULT_RETRY)
    assert claude.url == "https://api.anthropic.com/v1/messages"
    assert isinstance(offline, OfflineProvider)
    assert [p.name for p in (openai, claude, offline)] == ["openai", "anthropic", "offline"]
    assert [p.model for p in (openai, claude, offline)] == [
        "gpt-4o",
        "claude-haiku-4-5",
        "offline",
    ]


async def test_key_is_required_by_the_vendors_own_endpoints() -> None:
    async with httpx.AsyncClient() as http:
        for spec in ("openai:gpt-4o", "anthropic:claude-haiku-4-5"):
            with pytest.raises(ProviderConfigError, match="needs an API key"):
                make_provider(spec, http=http, base_url=None, api_key=None)
            with pytest.raises(ProviderConfigError, match="needs an API key"):
                make_provider(spec, http=http, base_url=None, api_key="")
        local = make_provider(
            "openai:m", http=http, base_url="http://127.0.0.1:8000/v1/", api_key=None
        )
    assert isinstance(local, OpenAICompatProvider)
    assert local.base_url == "http://127.0.0.1:8000/v1"
    assert local.token_field == "max_tokens"


async def test_bad_base_url_and_timeout_are_refused() -> None:
    async with httpx.AsyncClient() as http:
        with pytest.raises(ProviderConfigError, match="http:// or https://"):
            make_provider("openai:m", http=http, base_url="localhost:8000", api_key=None)
        with pytest.raises(ProviderConfigError, match="timeout"):
            make_provider("openai:m", http=http, base_url="http://h", api_key=None, timeout_s=0)


async def test_keys_never_show_in_reprs_or_errors() -> None:
    async with httpx.AsyncClient() as http:
        made = make_provider("openai:m", http=http, base_url=None, api_key="sk-secret")
        assert "sk-secret" not in repr(made)
    error = ProviderError(provider="openai", model="m", reason="timeout", attempts=4)
    assert str(error) == "openai:m failed, timeout after 4 attempts"
    error = ProviderError(
        provider="anthropic", model="c", reason="client_error", attempts=1, status=401, detail="x"
    )
    assert str(error) == "anthropic:c failed, client_error (HTTP 401) after 1 attempt: x"
