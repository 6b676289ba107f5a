"""Model tiers: the model is chosen by the size of the assembled window."""

from __future__ import annotations

import pytest

from gateway.providers import (
    ModelTier,
    ProviderConfigError,
    choose_tier,
    model_for_window,
    parse_tiers,
)

SMALL = ModelTier(8000, "openai:gpt-4o-mini")
LARGE = ModelTier(128_000, "openai:gpt-4o")
TIERS = (SMALL, LARGE)


@pytest.mark.parametrize(
    ("tokens", "tier"),
    [(0, SMALL), (1500, SMALL), (8000, SMALL), (8001, LARGE), (128_000, LARGE), (500_000, LARGE)],
)
def test_first_tier_that_holds_the_window_else_the_last(tokens: int, tier: ModelTier) -> None:
    assert choose_tier(TIERS, tokens) == tier


def test_no_tiers_means_no_choice() -> None:
    assert choose_tier((), 100) is None
    assert model_for_window((), 100, "anthropic:claude-haiku-4-5") == "anthropic:claude-haiku-4-5"
    assert model_for_window(TIERS, 9000, "offline") == "openai:gpt-4o"


def test_parse_tenant_tiers() -> None:
    raw = [
        {"max_window_tokens": 8000, "model": "openai:gpt-4o-mini"},
        {"max_window_tokens": 128000, "model": " openai:gpt-4o "},
    ]
    assert parse_tiers(raw) == TIERS
    assert parse_tiers(None) == ()
    assert parse_tiers([]) == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("openai:gpt-4o", "must be a list"),
        ([3], "model_tiers[0]: must be an object"),
        ([{"max_window_tokens": 8000}], "model_tiers[0].model"),
        (
            [{"max_window_tokens": "8k", "model": "offline"}],
            "max_window_tokens: must be an integer",
        ),
        ([{"max_window_tokens": True, "model": "offline"}], "must be an integer"),
        ([{"max_window_tokens": 0, "model": "offline"}], "positive integer"),
        ([{"max_window_tokens": 8000, "model": "gpt-4o"}], "invalid model spec"),
        ([{"max_window_tokens": 8000, "model": "offline", "strategy": "rag"}], "unknown keys"),
        (
            [
                {"max_window_tokens": 8000, "model": "offline"},
                {"max_window_tokens": 8000, "model": "openai:gpt-4o"},
            ],
            "must increase",
        ),
    ],
)
def test_bad_tiers_are_refused_naming_the_entry(raw: object, message: str) -> None:
    with pytest.raises(ProviderConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_tiers(raw)
