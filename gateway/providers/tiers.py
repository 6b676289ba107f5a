"""Model tiers per tenant: the model is chosen by the size of the assembled window.

A tenant may list tiers in its settings, smallest first, e.g.::

    "model_tiers": [
        {"max_window_tokens": 8000, "model": "openai:gpt-4o-mini"},
        {"max_window_tokens": 128000, "model": "openai:gpt-4o"}
    ]

A window of up to 8,000 tokens goes to the small model, anything larger to the next tier whose
ceiling it fits, and a window above every ceiling to the last (largest) tier. The window's size
is ``BudgetReport.estimated_tokens``; choosing happens after the window is built, so the
choice never changes what the window holds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.providers.base import ProviderConfigError
from gateway.providers.factory import parse_spec

__all__ = ["ModelTier", "choose_tier", "model_for_window", "parse_tiers"]


@dataclass(frozen=True, slots=True)
class ModelTier:
    """Windows of up to ``max_window_tokens`` tokens go to the model ``spec``."""

    max_window_tokens: int
    spec: str

    def __post_init__(self) -> None:
        if isinstance(self.max_window_tokens, bool) or self.max_window_tokens < 1:
            raise ProviderConfigError(
                f"model tier max_window_tokens must be a positive integer, "
                f"got {self.max_window_tokens!r}"
            )
        parse_spec(self.spec)


def choose_tier(tiers: Sequence[ModelTier], window_tokens: int) -> ModelTier | None:
    """The first tier whose ceiling holds ``window_tokens``, else the last; None without tiers."""
    for tier in tiers:
        if window_tokens <= tier.max_window_tokens:
            return tier
    return tiers[-1] if tiers else None


def model_for_window(tiers: Sequence[ModelTier], window_tokens: int, default_spec: str) -> str:
    """The spec to call for a window: the chosen tier's, or ``default_spec`` without tiers."""
    tier = choose_tier(tiers, window_tokens)
    return default_spec if tier is None else tier.spec


def _tier(index: int, item: object) -> ModelTier:
    where = f"model_tiers[{index}]"
    if not isinstance(item, Mapping):
        raise ProviderConfigError(f"{where}: must be an object with max_window_tokens and model")
    unknown = set(item) - {"max_window_tokens", "model"}
    if unknown:
        raise ProviderConfigError(f"{where}: unknown keys {sorted(map(str, unknown))}")
    ceiling = item.get("max_window_tokens")
    spec = item.get("model")
    if isinstance(ceiling, bool) or not isinstance(ceiling, int):
        raise ProviderConfigError(f"{where}.max_window_tokens: must be an integer")
    if not isinstance(spec, str):
        raise ProviderConfigError(f"{where}.model: must be a model spec string")
    try:
        return ModelTier(ceiling, spec.strip())
    except ProviderConfigError as exc:
        raise ProviderConfigError(f"{where}: {exc}") from exc


def parse_tiers(raw: object) -> tuple[ModelTier, ...]:
    """Tiers from tenant settings (a list of ``{"max_window_tokens", "model"}`` objects).

    None or an empty list means no tiers. Ceilings must strictly increase, so that "the first
    tier that fits" is also the smallest model that fits.
    """
    if raw is None:
        return ()
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise ProviderConfigError("model_tiers: must be a list of tiers")
    tiers = tuple(_tier(index, item) for index, item in enumerate(raw))
    for before, after in zip(tiers, tiers[1:], strict=False):
        if after.max_window_tokens <= before.max_window_tokens:
            raise ProviderConfigError(
                "model_tiers: max_window_tokens must increase from one tier to the next "
                f"({before.max_window_tokens} then {after.max_window_tokens})"
            )
    return tiers
