"""The client behind a request: the peer, or what a trusted proxy forwarded."""

from __future__ import annotations

import pytest

from gateway.config import ConfigError, load_settings
from gateway.http.client_address import resolve_client

PROXY = ("10.0.0.0/8", "127.0.0.1")


def test_an_untrusted_peer_is_the_client_whatever_it_forwards() -> None:
    client = resolve_client(
        "203.0.113.9",
        peer_secure=False,
        forwarded_for="198.51.100.1",
        forwarded_proto="https",
        trusted=PROXY,
    )
    assert (client.address, client.secure) == ("203.0.113.9", False)


def test_no_trusted_proxies_means_the_peer() -> None:
    client = resolve_client(
        "127.0.0.1",
        peer_secure=False,
        forwarded_for="198.51.100.1",
        forwarded_proto=None,
        trusted=(),
    )
    assert client.address == "127.0.0.1"


def test_a_trusted_proxy_names_the_right_most_untrusted_address() -> None:
    # The client put a made-up address first; our proxies appended the real one and their own.
    client = resolve_client(
        "127.0.0.1",
        peer_secure=False,
        forwarded_for="1.2.3.4, 198.51.100.7, 10.1.2.3",
        forwarded_proto="https",
        trusted=PROXY,
    )
    assert (client.address, client.secure) == ("198.51.100.7", True)


def test_a_trusted_proxy_without_the_header_is_the_client() -> None:
    client = resolve_client(
        "10.0.0.5", peer_secure=True, forwarded_for=None, forwarded_proto=None, trusted=PROXY
    )
    assert (client.address, client.secure) == ("10.0.0.5", True)


def test_a_garbled_hop_stops_the_walk_at_the_last_trusted_address() -> None:
    client = resolve_client(
        "127.0.0.1",
        peer_secure=False,
        forwarded_for="not-an-address, 10.9.9.9",
        forwarded_proto=None,
        trusted=PROXY,
    )
    assert client.address == "10.9.9.9"


def test_ports_and_brackets_are_stripped() -> None:
    client = resolve_client(
        "127.0.0.1",
        peer_secure=False,
        forwarded_for="[2001:db8::1]:443",
        forwarded_proto=None,
        trusted=PROXY,
    )
    assert client.address == "2001:db8::1"


def test_trusted_proxies_are_read_as_a_comma_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAYDESK_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1")
    assert load_settings().trusted_proxies == ("10.0.0.0/8", "127.0.0.1")
    monkeypatch.setenv("RELAYDESK_TRUSTED_PROXIES", "10.0.0.0/8, nonsense")
    with pytest.raises(ConfigError, match="RELAYDESK_TRUSTED_PROXIES"):
        load_settings()
