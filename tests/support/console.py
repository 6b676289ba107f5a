"""Console helpers: the operator account the console tests log in as, logging in through the
form, seeded customers (the `stack` fixture is in `tests/flows/console/conftest.py`)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from aiohttp import ClientSession, DummyCookieJar
from aiohttp.test_utils import TestClient

from gateway.storage.records import NewFact
from gateway.storage.repositories import facts
from tests.support.context_api import post_context, whatsapp_user_message
from tests.support.stack import API_KEY, Stack

USERNAME = "ana.ops"
PASSWORD = "correct horse battery"
NUMBER = "+5511998765432"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class Seeded:
    customer_id: str
    caller_customer_id: str
    whatsapp_identity_id: str
    email_fact_id: int
    pending_link_id: str


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)


async def log_in(client: TestClient) -> str:  # type: ignore[type-arg]
    """Log in through the form; returns the login's CSRF token."""
    form = await client.get("/console/login")
    assert form.status == 200
    response = await client.post(
        "/console/login",
        data={"csrf_token": csrf_of(await form.text()), "username": USERNAME, "password": PASSWORD},
        allow_redirects=False,
    )
    assert response.status == 303 and response.headers["Location"] == "/console"
    home = await client.get("/console")
    assert home.status == 200
    return csrf_of(await home.text())


@dataclass(frozen=True)
class LoginAnswer:
    status: int
    page: str
    retry_after: str | None
    set_cookies: tuple[str, ...]

    def set_cookie(self, name: str) -> str | None:
        """The Set-Cookie header of this cookie, or None."""
        return next((c for c in self.set_cookies if c.startswith(f"{name}=")), None)


async def post_login(
    client: TestClient,  # type: ignore[type-arg]
    username: str,
    password: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> LoginAnswer:
    """One submission of the login form on a connection of its own, with no cookie jar: any
    number of them can run at once (the form's double-submit token is a fresh one, sent as
    both the cookie and the field, as the form page would hand it out)."""
    token = secrets.token_urlsafe(16)
    sent = {**(headers or {}), "Cookie": f"relaydesk_login_csrf={token}"}
    form = {"csrf_token": token, "username": username, "password": password}
    async with ClientSession(cookie_jar=DummyCookieJar()) as session:
        async with session.post(
            client.make_url("/console/login"), data=form, headers=sent, allow_redirects=False
        ) as response:
            return LoginAnswer(
                status=response.status,
                page=await response.text(),
                retry_after=response.headers.get("Retry-After"),
                set_cookies=tuple(response.headers.getall("Set-Cookie", ())),
            )


async def _context(client: TestClient, **body: object) -> dict[str, object]:  # type: ignore[type-arg]
    return await post_context(client, AUTH, **body)


async def seed(stack: Stack) -> Seeded:
    """A verified WhatsApp customer with facts, and a caller id that waits as a pending link."""
    client = stack.client
    verified = await _context(client, channel="whatsapp", external_id=NUMBER, message="oi")
    customer_id = str(verified["customer_id"])
    async with stack.sessions().begin() as session:
        identity, source = await whatsapp_user_message(
            session, customer_id, NUMBER, "meu e-mail é ana@old.example", 8
        )
        email = await facts.record_fact(
            session, customer_id, NewFact("email", "ana@old.example", "profile", source.id)
        )
        await facts.record_fact(
            session,
            customer_id,
            NewFact("order_id", "PED-4471", "account", source.id, confirmed=True),
        )
    caller = await _context(client, channel="phone", external_id=NUMBER, message="sobre o pedido")
    assert caller["customer_id"] != customer_id
    pending = await client.get("/v1/operator/pending-links", headers=AUTH)
    links = (await pending.json())["pending_links"]
    assert len(links) == 1
    return Seeded(
        customer_id=customer_id,
        caller_customer_id=str(caller["customer_id"]),
        whatsapp_identity_id=identity.id,
        email_fact_id=email.id,
        pending_link_id=links[0]["id"],
    )
