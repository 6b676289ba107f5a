"""The model side of the flow built from the process settings: the provider pool (the default
model and the ones tenants name), the voice-note transcriber, and the API keys they use."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from context import TokenCounter
from gateway.config import Settings
from gateway.providers import ModelProvider, make_provider
from gateway.providers.pool import ProviderPool
from gateway.providers.transcriber import OpenAITranscriber


def secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def providers_for(
    settings: Settings, http: httpx.AsyncClient, counter: TokenCounter
) -> ProviderPool:
    api_key = secret(settings.model_api_key)

    def make(spec: str) -> ModelProvider:
        return make_provider(
            spec,
            http=http,
            base_url=settings.model_base_url,
            api_key=api_key,
            count=counter.count,
        )

    return ProviderPool(make(settings.model), make)


def transcriber_for(settings: Settings, http: httpx.AsyncClient) -> OpenAITranscriber | None:
    if not settings.transcriber_model:
        return None
    return OpenAITranscriber(
        http,
        base_url=settings.transcriber_base_url
        or settings.model_base_url
        or "https://api.openai.com/v1",
        api_key=secret(settings.transcriber_api_key) or secret(settings.model_api_key),
        model=settings.transcriber_model,
    )
