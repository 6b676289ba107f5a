"""The fetch policy on addresses and URLs: only public addresses, however they are written,
unless the deployment's allowlist names the host or its network; one internal address among a
host's public ones refuses it."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from outbound import FetchPolicy, FetchRefused, blocked_reason
from outbound.policy import parse_allow

PUBLIC = ip_address("93.184.216.34")


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd00:ec2::254", "private"),  # a cloud metadata service's IPv6 address
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("fe80::1", "link-local"),
        ("100.100.100.200", "shared"),  # carrier-grade NAT space (a metadata service too)
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "private"),  # documentation (the ipaddress module counts it private)
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:169.254.169.254", "link-local"),
        ("64:ff9b::a00:1", "private"),  # NAT64 of 10.0.0.1
        ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254
    ],
)
def test_internal_addresses_are_refused_however_written(address: str, reason: str) -> None:
    found = blocked_reason(ip_address(address))
    assert found is not None and reason in found


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111"])
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ip_address(address)) is None
    FetchPolicy().check_addresses("example.org", [ip_address(address)])


def test_one_internal_address_among_public_ones_refuses_the_host() -> None:
    answers = [PUBLIC, ip_address("10.0.0.5"), ip_address("8.8.8.8")]
    with pytest.raises(FetchRefused, match=r"files\.example \(10\.0\.0\.5\) is a private"):
        FetchPolicy().check_addresses("files.example", answers)
    with pytest.raises(FetchRefused, match="no address"):
        FetchPolicy().check_addresses("files.example", [])


def test_the_refusal_names_the_setting_that_lets_it_through() -> None:
    with pytest.raises(FetchRefused, match="RELAYDESK_FETCH_ALLOW"):
        FetchPolicy().check_addresses("127.0.0.1", [ip_address("127.0.0.1")])


def test_the_allowlist_lets_listed_networks_and_hosts_through() -> None:
    policy = FetchPolicy.allowing(["10.20.0.0/16", "127.0.0.1", "events.internal", "*.corp"])
    policy.check_addresses("a.example", [ip_address("10.20.3.4"), PUBLIC])
    policy.check_addresses("127.0.0.1", [ip_address("127.0.0.1")])
    policy.check_addresses("a.example", [ip_address("::ffff:10.20.3.4")])  # mapped, same network
    # A listed name may resolve to anything (the deployment vouches for it).
    policy.check_addresses("events.internal", [ip_address("10.9.9.9")])
    policy.check_addresses("EVENTS.internal.", [ip_address("172.16.0.2")])
    policy.check_addresses("db.corp", [ip_address("192.168.0.3")])
    # Anything else internal is still refused: the next address of the network, another name.
    for host, address in [
        ("a.example", "10.21.0.1"),
        ("a.example", "127.0.0.2"),
        ("events.internal.evil.example", "10.9.9.9"),
        ("corp", "10.9.9.9"),
    ]:
        with pytest.raises(FetchRefused):
            policy.check_addresses(host, [ip_address(address)])


def test_only_http_and_https_urls_with_a_host() -> None:
    policy = FetchPolicy()
    policy.check_target("https", "cdn.example.org")
    policy.check_target("HTTP", "cdn.example.org")
    for scheme, host in [("ftp", "a.example"), ("file", ""), ("gopher", "a.example"), ("", "a")]:
        with pytest.raises(FetchRefused):
            policy.check_target(scheme, host)
    with pytest.raises(FetchRefused, match="no host"):
        policy.check_target("https", "")


def test_an_allowlist_entry_is_a_host_an_address_or_a_network() -> None:
    hosts, networks = parse_allow(["10.0.0.0/8", "fd00::/8", "127.0.0.1", "Events.Internal"])
    assert hosts == ("events.internal",)
    assert [str(n) for n in networks] == ["10.0.0.0/8", "fd00::/8", "127.0.0.1/32"]
    for bad in ["http://events.internal", "10.0.0.0/33", "a b", "*"]:
        with pytest.raises(ValueError):
            parse_allow([bad])
