"""Tenant settings: the rate limits are rates in the `limits` notation, checked when the
settings are read (a bad one names its key), and a limit set to null is off."""

from __future__ import annotations

import pytest

from gateway.tenants import RateLimitSettings, TenantConfigError, effective_settings


def test_the_defaults_the_flow_tests_count_to() -> None:
    """tests/flows/rate_limits and the console's login test count to these."""
    defaults = RateLimitSettings()
    assert defaults.visitor_ids_per_address == "60/hour"
    assert defaults.webchat_messages_per_visitor == "20/minute"
    assert defaults.webchat_frames_per_visitor == "60/minute"
    assert defaults.model_calls_per_customer == "60/minute"
    assert defaults.console_logins_per_address == "20/minute"


def test_rate_limits_merge_key_by_key_and_null_turns_one_off() -> None:
    settings = effective_settings(
        [
            {"rate_limits": {"visitor_ids_per_address": None}},  # the host's level
            {"rate_limits": {"model_calls_per_customer": "5 per 10 seconds"}},  # the domain's
        ]
    )
    assert settings.rate_limits.visitor_ids_per_address is None
    assert settings.rate_limits.model_calls_per_customer == "5 per 10 seconds"
    assert settings.rate_limits.webchat_messages_per_visitor == "20/minute"  # the default


@pytest.mark.parametrize("rate", ["fast", "0/minute", "10/fortnight", 60])
def test_a_rate_that_cannot_be_used_is_refused_naming_its_key(rate: object) -> None:
    with pytest.raises(TenantConfigError, match=r"rate_limits\.webchat_frames_per_visitor"):
        effective_settings([{"rate_limits": {"webchat_frames_per_visitor": rate}}])
