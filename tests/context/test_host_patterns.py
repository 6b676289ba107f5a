"""Host patterns: exact hosts, `*.` for subdomains only, case and a trailing dot ignored."""

from __future__ import annotations

import pytest

from context.host_patterns import any_host_matches, host_matches, is_host_pattern


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("cdn.example.org", "cdn.example.org", True),
        ("cdn.example.org", "CDN.Example.org.", True),
        ("cdn.example.org", "evil-cdn.example.org", False),
        ("cdn.example.org", "cdn.example.org.evil.test", False),
        ("*.example.org", "a.example.org", True),
        ("*.example.org", "a.b.example.org", True),
        ("*.example.org", "example.org", False),
        ("*.example.org", "badexample.org", False),
        ("10.0.0.7", "10.0.0.7", True),
        ("10.0.0.7", "", False),
    ],
)
def test_a_pattern_matches_its_host_or_subdomains(pattern: str, host: str, matches: bool) -> None:
    assert host_matches(pattern, host) is matches


def test_a_list_matches_when_any_entry_does() -> None:
    assert any_host_matches(["a.example", "*.b.example"], "x.b.example")
    assert not any_host_matches([], "a.example")


@pytest.mark.parametrize("value", ["cdn.example.org", "*.example.org", "10.0.0.7", "fd00::1"])
def test_hosts_addresses_and_wildcards_are_patterns(value: str) -> None:
    assert is_host_pattern(value)


@pytest.mark.parametrize(
    "value", ["", "*.", "https://cdn.example.org", "cdn.example.org/x", "a b", "*", "ex*.org"]
)
def test_urls_and_other_text_are_not_patterns(value: str) -> None:
    assert not is_host_pattern(value)
