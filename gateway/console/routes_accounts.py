"""`/console/accounts`: the Accounts page and its form actions, for admins only (an agent gets
a 403 page). The actions and their rules are `gateway.operators.account_actions`."""

from __future__ import annotations

from urllib.parse import quote

from aiohttp import web

from gateway.console.pages import console, form_text, html_response, redirect
from gateway.console.views_accounts import accounts_page
from gateway.http.errors import BadRequest
from gateway.keys import SESSIONS
from gateway.operators import account_actions
from gateway.operators.account_actions import AccountActor
from gateway.operators.actor import require_admin
from gateway.operators.logins import OperatorLogin


@console
async def accounts(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)
    async with request.app[SESSIONS]() as session:
        listed = await account_actions.list_accounts(session)
    return html_response(accounts_page(login, listed, request.query.get("done")))


@console
async def act(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)
    form = await request.post()
    username = form_text(form, "username").strip()
    action = request.match_info["action"]
    actor = AccountActor.of_login(login)
    async with request.app[SESSIONS].begin() as session:
        if action == "reset-password":
            password = await account_actions.reset_password(session, username, None, actor=actor)
            listed = await account_actions.list_accounts(session)
            # Answered here, not redirected: the new password must never sit in a URL.
            return html_response(accounts_page(login, listed, None, (username, password)))
        if action == "disable":
            await account_actions.disable_account(session, username, actor=actor)
        elif action == "enable":
            await account_actions.enable_account(session, username, actor=actor)
        else:
            if form_text(form, "confirm").strip() != username:
                raise BadRequest("type the username to confirm the removal", code="not_confirmed")
            await account_actions.remove_account(session, username, actor=actor)
    done = f"operator {username} {action}d"
    return redirect(f"/console/accounts?done={quote(done)}")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/console/accounts", accounts)
    app.router.add_post("/console/accounts/{action:disable|enable|reset-password|remove}", act)
