"""Console login attempts per client address are capped (the tenant's
`console_logins_per_address`, 20 a minute by default), apart from the failure throttle: even
right passwords, which never trip the throttle, stop at the cap with 429 and `Retry-After`."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from tests.support.console import PASSWORD, USERNAME, csrf_of
from tests.support.stack import Stack

LOGINS = 20  # the default (tests/gateway/test_tenants.py checks it still is)


async def _log_in(client: TestClient) -> tuple[int, str, dict[str, str]]:  # type: ignore[type-arg]
    """A fresh login form and its submission, as a new browser would (no cookies kept)."""
    client.session.cookie_jar.clear()
    form = await client.get("/console/login")
    response = await client.post(
        "/console/login",
        data={"csrf_token": csrf_of(await form.text()), "username": USERNAME, "password": PASSWORD},
        allow_redirects=False,
    )
    return response.status, await response.text(), dict(response.headers)


async def test_login_attempts_from_one_address_stop_at_the_cap(stack: Stack) -> None:
    for _ in range(LOGINS):
        status, page, headers = await _log_in(stack.client)
        assert status == 303 and headers["Location"] == "/console", page
    status, page, headers = await _log_in(stack.client)
    assert status == 429
    assert 1 <= int(headers["Retry-After"]) <= 60
    assert "Try again in" in page
    metrics = await (await stack.client.get("/metrics")).text()
    assert 'relaydesk_rate_limited_total{door="console_logins"} 1.0' in metrics
