"""Provider specs (``offline``, ``openai:<model>``, ``anthropic:<model>``) and `make_provider`.

Providers are cheap, immutable values around the one shared ``httpx.AsyncClient``; building one
per turn (for instance after choosing a model tier) costs nothing and opens no connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

import httpx

from gateway.providers.anthropic import ANTHROPIC_BASE_URL, AnthropicProvider
from gateway.providers.base import ModelProvider, ProviderConfigError
from gateway.providers.offline import OfflineProvider
from gateway.providers.openai_compat import OPENAI_BASE_URL, OpenAICompatProvider, token_field_for
from gateway.providers.retry import DEFAULT_RETRY, RetryPolicy

__all__ = ["OFFLINE_SPEC", "ProviderKind", "ProviderSpec", "make_provider", "parse_spec"]

ProviderKind = Literal["offline", "openai", "anthropic"]
OFFLINE_SPEC: Final = "offline"
# The vendors' own endpoints refuse anonymous calls; a missing key there is a configuration
# mistake worth stopping for, not a failure to discover on the first customer message.
_KEYED_HOSTS: Final = frozenset({"api.openai.com", "api.anthropic.com"})


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A parsed spec. The model name is everything after the first colon, so names with
    colons of their own (``openai:llama3.1:8b`` for Ollama) stay whole."""

    kind: ProviderKind
    model: str

    def __str__(self) -> str:
        return self.kind if self.kind == "offline" else f"{self.kind}:{self.model}"


def parse_spec(spec: str) -> ProviderSpec:
    """``offline`` | ``openai:<model>`` | ``anthropic:<model>``; anything else is refused."""
    text = spec.strip()
    if text == OFFLINE_SPEC:
        return ProviderSpec("offline", "offline")
    kind, _, model = text.partition(":")
    model = model.strip()
    if kind == "openai" and model:
        return ProviderSpec("openai", model)
    if kind == "anthropic" and model:
        return ProviderSpec("anthropic", model)
    raise ProviderConfigError(
        f"invalid model spec {spec!r}: use 'offline', 'openai:<model>' or 'anthropic:<model>'"
    )


class _HttpSettings(TypedDict):
    """What every HTTP provider is built with."""

    http: httpx.AsyncClient
    model: str
    base_url: str
    api_key: str | None
    timeout_s: float
    retry: RetryPolicy


def _base_url(given: str | None, default: str) -> str:
    if given is None or not given.strip():
        return default
    url = given.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ProviderConfigError(f"model base URL must be http:// or https://, got {given!r}")
    return url


def make_provider(
    spec: str,
    *,
    http: httpx.AsyncClient,
    base_url: str | None,
    api_key: str | None,
    timeout_s: float = 60.0,
    retry: RetryPolicy = DEFAULT_RETRY,
    count: Callable[[str], int] | None = None,
) -> ModelProvider:
    """The provider for ``spec`` on the shared client.

    ``base_url`` None means the vendor's own endpoint (``https://api.openai.com/v1``,
    ``https://api.anthropic.com``), which then needs ``api_key``. ``timeout_s`` bounds each
    HTTP attempt; ``retry`` decides how many there are. ``count`` is the offline provider's
    token counter (``TokenCounter.count``); the HTTP providers use the vendor's own usage
    numbers. Raises `ProviderConfigError` for an unusable spec, URL, key or timeout.
    """
    parsed = parse_spec(spec)
    if parsed.kind == "offline":
        return OfflineProvider() if count is None else OfflineProvider(count=count)
    if not timeout_s > 0:
        raise ProviderConfigError(f"model timeout must be positive, got {timeout_s!r}")
    key = api_key or None
    url = _base_url(base_url, OPENAI_BASE_URL if parsed.kind == "openai" else ANTHROPIC_BASE_URL)
    _require_key(url, key)
    settings = _HttpSettings(
        http=http, model=parsed.model, base_url=url, api_key=key, timeout_s=timeout_s, retry=retry
    )
    if parsed.kind == "openai":
        return OpenAICompatProvider(**settings, token_field=token_field_for(url))
    return AnthropicProvider(**settings)


def _require_key(url: str, key: str | None) -> None:
    host = httpx.URL(url).host
    if key is None and host in _KEYED_HOSTS:
        raise ProviderConfigError(f"{host} needs an API key (RELAYDESK_MODEL_API_KEY)")
