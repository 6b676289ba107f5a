"""Who calls the operator JSON API: the Bearer API key, or an operator's login cookie with
the login's CSRF token in `X-CSRF-Token` on every state-changing call."""

from __future__ import annotations

from aiohttp import web

from gateway.http.auth import require_api_key
from gateway.http.errors import Forbidden, Unauthorized
from gateway.operators.logins import csrf_matches, current_login

CSRF_HEADER = "X-CSRF-Token"
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


async def operator_actor(request: web.Request) -> str | None:
    """Authenticate a call of the operator JSON API: with the Bearer API key (returns None: the
    body's `actor` names who acts) or with a login (returns its username; a POST must
    carry `X-CSRF-Token`). Raises `Unauthorized` / `Forbidden`."""
    if request.headers.get("Authorization"):
        require_api_key(request)
        return None
    login = await current_login(request)
    if login is None:
        raise Unauthorized("a valid Bearer API key or a console login is required")
    if request.method not in _SAFE_METHODS and not csrf_matches(
        login, request.headers.get(CSRF_HEADER)
    ):
        raise Forbidden("the X-CSRF-Token header is missing or wrong", code="csrf_failed")
    return login.username
