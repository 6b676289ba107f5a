"""The console's cookies and the CSRF token of its forms.

The login cookie (`gateway.operators.logins.COOKIE`) and the login form's double-submit cookie
are HttpOnly, SameSite=Strict, and Secure when the gateway is reached over https. Every
state-changing console form carries the login's CSRF token in a hidden `csrf_token` field; the
login form itself carries the token of the `relaydesk_login_csrf` cookie.
"""

from __future__ import annotations

from aiohttp import web

from gateway.http.client_address import client_of
from gateway.keys import SETTINGS
from gateway.operators.logins import SESSION_TTL

LOGIN_CSRF_COOKIE = "relaydesk_login_csrf"
CSRF_FIELD = "csrf_token"


def is_secure(request: web.Request) -> bool:
    public = request.app[SETTINGS].public_url or ""
    return client_of(request).secure or public.startswith("https://")


def set_cookie(response: web.StreamResponse, request: web.Request, name: str, value: str) -> None:
    response.set_cookie(
        name,
        value,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=is_secure(request),
        max_age=int(SESSION_TTL.total_seconds()),
    )
