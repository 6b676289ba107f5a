"""Who calls the operator JSON API: the Bearer API key, or an operator's login cookie with
the login's CSRF token in `X-CSRF-Token` on every state-changing call. The API key acts as an
admin; a login acts with its account's role (`admin_actor` refuses an agent)."""

from __future__ import annotations

from aiohttp import web

from gateway.http.auth import require_api_key
from gateway.http.errors import Forbidden, Unauthorized
from gateway.operators.logins import OperatorLogin, csrf_matches, current_login

CSRF_HEADER = "X-CSRF-Token"
API_KEY_ACTOR = "api-key"
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


async def operator_actor(request: web.Request, *, admin_only: bool = False) -> str | None:
    """Authenticate a call of the operator JSON API: with the Bearer API key (returns None: the
    body's `actor` names who acts) or with a login (returns its username; a POST must
    carry `X-CSRF-Token`). With `admin_only`, an agent's login is refused (`Forbidden`, code
    `admin_only`); the API key acts as an admin. Raises `Unauthorized` / `Forbidden`."""
    login = await acting_login(request, admin_only=admin_only)
    return None if login is None else login.username


async def acting_login(request: web.Request, *, admin_only: bool = False) -> OperatorLogin | None:
    """`operator_actor`, answering the login itself (None for the API key)."""
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
    if admin_only:
        require_admin(login)
    return login


async def admin_actor(request: web.Request) -> str:
    """`operator_actor` for what only an admin may do (erase customers, change settings,
    manage accounts): the API key acts as an admin (returns `API_KEY_ACTOR`, the name its
    actions are audited under); a login must be an admin's (returns its username), an
    agent's is refused with `Forbidden` (code `admin_only`)."""
    return await operator_actor(request, admin_only=True) or API_KEY_ACTOR


def require_admin(login: OperatorLogin) -> None:
    """Raise `Forbidden` (code `admin_only`) unless the login is an admin's."""
    if not login.is_admin:
        raise Forbidden(
            f"operator {login.username!r} is an agent: only an admin may do this",
            code="admin_only",
        )
