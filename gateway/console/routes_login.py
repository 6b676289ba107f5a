"""`/console/login` and `/console/logout`: the login form (its own double-submit CSRF cookie),
the throttled login, and the cookie set or dropped."""

from __future__ import annotations

import secrets

from aiohttp import web

from gateway.console import cookies, views
from gateway.console.pages import console, form_text, html_response, redirect
from gateway.http.client_address import client_of
from gateway.http.errors import GatewayError, TooManyRequests
from gateway.http.refusals import Refusal, log_refusal
from gateway.keys import SESSIONS
from gateway.operators import logins
from gateway.rate_limits.doors import Door, enforce
from gateway.storage.repositories import operators


async def login_form(request: web.Request) -> web.StreamResponse:
    if await logins.current_login(request) is not None:
        return redirect("/console")
    token = secrets.token_urlsafe(32)
    no_account = await _no_account_yet(request)
    response = html_response(views.login_page(token, no_account=no_account))
    cookies.set_cookie(response, request, cookies.LOGIN_CSRF_COOKIE, token)
    return response


async def _no_account_yet(request: web.Request) -> bool:
    async with request.app[SESSIONS]() as session:
        return await operators.count_operators(session) == 0


async def login_submit(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    expected = request.cookies.get(cookies.LOGIN_CSRF_COOKIE, "")
    presented = form_text(form, cookies.CSRF_FIELD)
    if not expected or not secrets.compare_digest(expected.encode(), presented.encode()):
        log_refusal(request, Refusal("csrf_failed", "the login form's CSRF token is wrong"))
        return html_response(views.error_page(None, 403, "The login form expired; reload it."), 403)
    try:
        await enforce(request, Door.CONSOLE_LOGINS, client_of(request).address)
        token, _ = await logins.attempt_login(
            request.app[SESSIONS],
            logins.ledger_of(request.app),
            form_text(form, "username"),
            form_text(form, "password"),
            client=client_of(request).address,
        )
    except TooManyRequests as exc:
        log_refusal(request, Refusal("rate_limited", exc.detail))
        notice = f"Too many failed logins. Try again in {exc.retry_after_s} seconds."
        response = await _login_again(request, notice, 429)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response
    except GatewayError as exc:
        log_refusal(request, Refusal("bad_login", exc.detail))
        return await _login_again(request, "Unknown operator or wrong password.", 401)
    response = redirect("/console")
    cookies.set_cookie(response, request, logins.COOKIE, token)
    response.del_cookie(cookies.LOGIN_CSRF_COOKIE, path="/")
    return response


async def _login_again(request: web.Request, notice: str, status: int) -> web.Response:
    fresh = secrets.token_urlsafe(32)
    no_account = await _no_account_yet(request)
    response = html_response(views.login_page(fresh, notice, no_account=no_account), status)
    cookies.set_cookie(response, request, cookies.LOGIN_CSRF_COOKIE, fresh)
    return response


@console
async def logout(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    async with request.app[SESSIONS].begin() as session:
        await logins.log_out(session, request.cookies.get(logins.COOKIE, ""))
    response = redirect("/console/login")
    response.del_cookie(logins.COOKIE, path="/")
    return response
