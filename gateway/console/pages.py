"""What every console page shares: the login and CSRF check around a page's handler, and the
headers of an HTML answer.

Every page needs a login (otherwise 303 to `/console/login`); every form POST needs the login's
CSRF token in the `csrf_token` field (otherwise 403, nothing changed). Pages are answered with
`Cache-Control: no-store` and a Content-Security-Policy that allows only this origin's
stylesheet, images and form targets, and no framing. A refusal (`gateway.http.errors`, a missing
record, an ownership clash) becomes an error page with its status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Final

from aiohttp import web
from multidict import MultiDictProxy

from gateway.console import cookies, views
from gateway.console.html import Html
from gateway.http.errors import GatewayError
from gateway.http.refusals import Refusal, log_refusal, refusal_of
from gateway.operators import logins
from gateway.storage.errors import RecordNotFound
from identity import OwnershipConflict

POLICY: Final = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        # The conversations pages read the operator API and the change stream.
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ]
)
ConsoleHandler = Callable[[web.Request, logins.OperatorLogin], Awaitable[web.StreamResponse]]
Form = MultiDictProxy[str | bytes | bytearray | web.FileField]


def html_response(body: Html, status: int = 200) -> web.Response:
    return web.Response(
        text=body,
        status=status,
        content_type="text/html",
        headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
            "X-Frame-Options": "DENY",
        },
    )


def console(handler: ConsoleHandler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Require a login (redirect to the login page) and, on POST, the CSRF token; storage and
    gateway errors become an error page with their status."""

    @wraps(handler)
    async def wrapped(request: web.Request) -> web.StreamResponse:
        login = await logins.current_login(request)
        if login is None:
            return redirect("/console/login")
        if request.method == "POST":
            form = await request.post()
            if not logins.csrf_matches(login, form_text(form, cookies.CSRF_FIELD)):
                log_refusal(request, Refusal("csrf_failed", "the form's CSRF token is wrong"))
                return html_response(
                    views.error_page(login, 403, "The form's CSRF token is missing or wrong."),
                    403,
                )
        try:
            return await handler(request, login)
        except GatewayError as exc:
            refusal = refusal_of(exc)
            if refusal is not None:
                log_refusal(request, refusal)
            return html_response(views.error_page(login, exc.status, exc.detail), exc.status)
        except RecordNotFound as exc:
            return html_response(views.error_page(login, 404, str(exc)), 404)
        except OwnershipConflict as exc:
            return html_response(views.error_page(login, 409, str(exc)), 409)

    return wrapped


def form_text(form: Form, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location, "Cache-Control": "no-store"})
