"""Another operator's browser beside the test client's own login: its own login cookie, sent
on a connection of its own, for tests where an admin and an agent act side by side."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import ClientSession, DummyCookieJar

from gateway.operators.actor import CSRF_HEADER
from gateway.operators.logins import COOKIE
from tests.support.console import csrf_of, post_login
from tests.support.stack import Stack


@dataclass
class OperatorBrowser:
    """Another operator's browser: its own login cookie on its own connection."""

    stack: Stack
    token: str
    csrf: str

    async def get(self, path: str) -> tuple[int, str, str | None]:
        async with ClientSession(cookie_jar=DummyCookieJar()) as http:
            async with http.get(
                self.stack.client.make_url(path),
                headers={"Cookie": f"{COOKIE}={self.token}"},
                allow_redirects=False,
            ) as response:
                return response.status, await response.text(), response.headers.get("Location")

    async def post(self, path: str, **form: str) -> tuple[int, str]:
        async with ClientSession(cookie_jar=DummyCookieJar()) as http:
            async with http.post(
                self.stack.client.make_url(path),
                data={"csrf_token": self.csrf, **form},
                headers={"Cookie": f"{COOKIE}={self.token}"},
                allow_redirects=False,
            ) as response:
                return response.status, await response.text()

    async def api(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        """A call of the JSON API with this login and its CSRF header."""
        async with ClientSession(cookie_jar=DummyCookieJar()) as http:
            async with http.request(
                method,
                self.stack.client.make_url(path),
                json=body,
                headers={"Cookie": f"{COOKIE}={self.token}", CSRF_HEADER: self.csrf},
            ) as response:
                return response.status, await response.json()


async def operator_logs_in(stack: Stack, username: str, password: str) -> OperatorBrowser | None:
    """Log in through the form; None when the login is refused."""
    answer = await post_login(stack.client, username, password)
    if answer.status != 303:
        return None
    cookie = answer.set_cookie(COOKIE)
    assert cookie is not None
    token = cookie.split(";")[0].split("=", 1)[1]
    operator = OperatorBrowser(stack, token, "")
    status, page, _ = await operator.get("/console")
    assert status == 200
    operator.csrf = csrf_of(page)
    return operator
