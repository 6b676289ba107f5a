"""Whose failures lock whom out, behind a reverse proxy: the gateway is reached from 127.0.0.1,
the proxy's address, and the client is the one `X-Forwarded-For` names only when that address
is in RELAYDESK_TRUSTED_PROXIES. A stranger failing for an operator locks out his own address,
never the operator typing the right password from hers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from gateway.operators.accounts import create_operator
from gateway.operators.throttle import ACCOUNT_GUARD, FREE_FAILURES, WINDOW
from gateway.runtime.clock import utcnow
from gateway.storage.models import LoginFailure
from tests.support.console import PASSWORD, USERNAME, LoginAnswer, post_login
from tests.support.stack import Stack, running_stack

WRONG = "not the password at all"
STRANGER = "203.0.113.7"
OPERATOR = "198.51.100.23"


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[Stack]:
    """A gateway behind a proxy at 127.0.0.1 (where the test client connects from)."""
    home = tmp_path / "proxied"
    home.mkdir()
    async with running_stack("embedded", home, RELAYDESK_TRUSTED_PROXIES="127.0.0.1") as run:
        async with run.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        yield run


async def _from(
    stack: Stack, client: str, username: str, password: str, *, proto: str = "http"
) -> LoginAnswer:
    """A login the proxy forwards for `client`."""
    headers = {"X-Forwarded-For": client, "X-Forwarded-Proto": proto}
    return await post_login(stack.client, username, password, headers=headers)


async def test_a_stranger_behind_the_proxy_locks_out_only_his_own_address(
    proxied: Stack,
) -> None:
    for _ in range(FREE_FAILURES):
        assert (await _from(proxied, STRANGER, USERNAME, WRONG)).status == 401
    refused = await _from(proxied, STRANGER, USERNAME, PASSWORD)
    assert refused.status == 429 and int(refused.retry_after or 0) >= 1

    # The operator, from her own address, is in at once.
    welcome = await _from(proxied, OPERATOR, USERNAME, PASSWORD)
    assert welcome.status == 303
    assert welcome.set_cookie("relaydesk_console") is not None
    # Her login does not forgive the stranger's failures.
    assert (await _from(proxied, STRANGER, USERNAME, WRONG)).status == 429


async def test_a_proxy_chain_names_the_client_nearest_the_trusted_proxy(proxied: Stack) -> None:
    # What the client itself put in front is not believed: the stranger cannot pose as
    # ever-new addresses to escape his own lockout.
    for index in range(FREE_FAILURES):
        answer = await _from(proxied, f"10.9.9.{index}, {STRANGER}", USERNAME, WRONG)
        assert answer.status == 401
    assert (await _from(proxied, f"10.9.9.99, {STRANGER}", USERNAME, WRONG)).status == 429


async def test_without_trusted_proxies_the_forwarded_address_is_ignored(stack: Stack) -> None:
    for index in range(FREE_FAILURES):
        answer = await _from(stack, f"203.0.113.{index + 1}", f"nobody-{index}", WRONG)
        assert answer.status == 401
    # Every attempt came from the one peer, whatever the header said: that address waits.
    refused = await _from(stack, OPERATOR, USERNAME, PASSWORD)
    assert refused.status == 429 and int(refused.retry_after or 0) >= 1


async def test_one_ipv6_network_counts_as_one_address(proxied: Stack) -> None:
    # One host of an IPv6 /64 can use any of its addresses: the /64 is what waits.
    for index in range(FREE_FAILURES):
        answer = await _from(proxied, f"2001:db8:7:7::{index + 1}", f"nobody-{index}", WRONG)
        assert answer.status == 401
    assert (await _from(proxied, "2001:db8:7:7::99", USERNAME, PASSWORD)).status == 429
    assert (await _from(proxied, "2001:db8:7:8::1", USERNAME, PASSWORD)).status == 303


async def test_an_account_under_attack_gets_one_free_failure_per_address(proxied: Stack) -> None:
    # Failures for the account from many addresses (a distributed guess) within the window.
    started = utcnow() - WINDOW / 2
    async with proxied.sessions().begin() as session:
        session.add_all(
            LoginFailure(
                account=USERNAME,
                client=f"192.0.2.{index % 250}",
                failed_at=started + timedelta(seconds=index),
            )
            for index in range(ACCOUNT_GUARD)
        )
    assert (await _from(proxied, STRANGER, USERNAME, WRONG)).status == 401
    assert (await _from(proxied, STRANGER, USERNAME, WRONG)).status == 429
    # Other accounts from that address are not held to the guard.
    assert (await _from(proxied, STRANGER, "nobody", WRONG)).status == 401
    # The operator typing the right password is never kept out by it.
    assert (await _from(proxied, OPERATOR, USERNAME, PASSWORD)).status == 303


async def test_the_login_cookie_is_secure_when_a_trusted_proxy_says_https(
    proxied: Stack, stack: Stack
) -> None:
    https = await _from(proxied, OPERATOR, USERNAME, PASSWORD, proto="https")
    assert https.status == 303
    assert "Secure" in str(https.set_cookie("relaydesk_console"))
    plain = await _from(proxied, OPERATOR, USERNAME, PASSWORD, proto="http")
    assert plain.status == 303
    assert "Secure" not in str(plain.set_cookie("relaydesk_console"))
    # From a peer that is not a trusted proxy the header is the client's say-so: ignored.
    untrusted = await _from(stack, OPERATOR, USERNAME, PASSWORD, proto="https")
    assert untrusted.status == 303
    assert "Secure" not in str(untrusted.set_cookie("relaydesk_console"))
