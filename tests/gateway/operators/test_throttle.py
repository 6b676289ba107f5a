"""The login throttle's pure rule: the address an attempt counts under, and who must wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.operators.throttle import (
    ACCOUNT_GUARD,
    FIRST_WAIT,
    FREE_FAILURES,
    Attempts,
    client_key,
    refusal,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _ago(count: int) -> list[datetime]:
    return [NOW - timedelta(seconds=1 + s) for s in range(count)]


def test_an_ipv6_client_counts_by_its_64_and_others_as_they_are() -> None:
    assert client_key("2001:db8:7:7::1") == client_key("2001:db8:7:7:ffff::9")
    assert client_key("2001:db8:7:7::1") == "2001:db8:7:7::/64"
    assert client_key("2001:db8:7:8::1") != client_key("2001:db8:7:7::1")
    assert client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_key("unknown") == "unknown"


def test_the_address_and_the_account_from_it_each_have_free_failures() -> None:
    some = _ago(FREE_FAILURES - 1)
    assert refusal(Attempts(some, some, len(some)), NOW) is None
    enough = _ago(FREE_FAILURES)
    assert refusal(Attempts(enough, [], 0), NOW) == FIRST_WAIT - timedelta(seconds=1)
    assert refusal(Attempts(enough, enough, FREE_FAILURES), NOW) is not None


def test_past_the_guard_an_address_has_one_free_failure_for_the_account() -> None:
    one = _ago(1)
    assert refusal(Attempts(one, one, ACCOUNT_GUARD - 1), NOW) is None
    assert refusal(Attempts(one, one, ACCOUNT_GUARD), NOW) == FIRST_WAIT - timedelta(seconds=1)
    # The guard never touches an address with no failures of its own for the account.
    assert refusal(Attempts(one, [], ACCOUNT_GUARD * 10), NOW) is None
