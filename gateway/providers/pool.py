"""The process's model providers by spec; a tenant may pick its own model or tiers."""

from __future__ import annotations

from collections.abc import Callable

from gateway.providers.base import ModelProvider
from gateway.providers.tiers import ModelTier, choose_tier
from gateway.tenants import TenantSettings


class ProviderPool:
    """The process's model providers by spec; a tenant may pick its own model or tiers."""

    def __init__(self, default: ModelProvider, make: Callable[[str], ModelProvider]) -> None:
        self._default = default
        self._make = make
        self._by_spec: dict[str, ModelProvider] = {}

    def for_window(self, tenant: TenantSettings, window_tokens: int) -> ModelProvider:
        spec = tenant.model
        if tenant.model_tiers:
            tier = choose_tier(
                [ModelTier(t.max_window_tokens, t.model) for t in tenant.model_tiers],
                window_tokens,
            )
            spec = tier.spec if tier is not None else spec
        if spec is None:
            return self._default
        if spec not in self._by_spec:
            self._by_spec[spec] = self._make(spec)
        return self._by_spec[spec]
