"""The `/chat` widget in a browser: identity tokens, whose account a stored visitor message went
to, and a customer's site on its own origin that frames the widget."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import jwt
from aiohttp import web
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from gateway.keys import SESSIONS
from gateway.storage.models import Message
from tests.support.stack import API_KEY, WEBCHAT_SECRET, Stack

WAIT_MS = 10_000
VISITOR_KEY = "relaydesk.visitor_id"
VISITOR_ID_JS = f"localStorage.getItem({json.dumps(VISITOR_KEY)})"
VERIFIED_PHONE = "+5511998765432"


def identity_token(sub: str, **claims: object) -> str:
    """An identity token the customer's site signs for its signed-in account `sub`."""
    payload = {"sub": sub, "exp": int(time.time()) + 600, **claims}
    return jwt.encode(payload, WEBCHAT_SECRET, algorithm="HS256")


def verified_token(sub: str) -> str:
    """A token that also vouches for the account's phone number."""
    return identity_token(sub, phone_number=VERIFIED_PHONE, phone_number_verified=True)


async def user_rows(stack: Stack, visitor: str) -> list[Message]:
    """The visitor's own messages as stored, oldest first."""
    async with stack.app[SESSIONS]() as session:
        rows = await session.scalars(
            select(Message)
            .where(Message.thread_key == f"webchat:{visitor}", Message.role == "user")
            .order_by(Message.id)
        )
        return list(rows)


async def customer_profile(stack: Stack, customer_id: str) -> dict[str, Any]:
    response = await stack.client.get(
        f"/v1/operator/customers/{customer_id}",
        headers={"Authorization": f"Bearer {API_KEY}"},
    )
    assert response.status == 200
    profile: dict[str, Any] = await response.json()
    return profile


async def assert_verified(stack: Stack, visitor: str, account: str) -> None:
    """The visitor's one message went to `account`, verified, with the token's phone number."""
    [row] = await user_rows(stack, visitor)
    assert row.extra is not None and row.extra["link_level"] == "verified"
    profile = await customer_profile(stack, row.customer_id)
    [identity] = [i for i in profile["identities"] if i["id"] == row.identity_id]
    assert identity["link_level"] == "verified" and account in identity["external_id"]
    assert {"kind": "phone", "value": VERIFIED_PHONE, "link_level": "verified"} in profile[
        "identifiers"
    ]


async def assert_anonymous(stack: Stack, visitor: str, account: str) -> None:
    """The visitor's one message stayed with the anonymous visitor: no account, no phone."""
    [row] = await user_rows(stack, visitor)
    assert row.extra is not None and row.extra["link_level"] == "anonymous"
    profile = await customer_profile(stack, row.customer_id)
    assert [i["link_level"] for i in profile["identities"]] == ["anonymous"]
    assert account not in json.dumps(profile)
    assert profile["identifiers"] == []


@dataclass
class Shop:
    """A customer's site on its own origin (its own port); `html` is its one page."""

    server: TestServer
    html: str = ""

    @property
    def origin(self) -> str:
        return f"http://{self.server.host}:{self.server.port}"

    @property
    def url(self) -> str:
        return str(self.server.make_url("/"))


@asynccontextmanager
async def shop_site() -> AsyncIterator[Shop]:
    site = web.Application()
    server = TestServer(site)
    shop = Shop(server)

    async def page(request: web.Request) -> web.Response:
        return web.Response(text=shop.html, content_type="text/html")

    site.router.add_get("/", page)
    await server.start_server()
    try:
        yield shop
    finally:
        await server.close()
