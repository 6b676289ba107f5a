"""`/console/conversations/{id}/actions/{held_id}/approve|reject`: an operator's decision on
a write held for approval (`gateway.operators.approvals`), from the conversation's page."""

from __future__ import annotations

import os
from urllib.parse import quote

from aiohttp import web

from gateway.console.pages import console, form_text, redirect
from gateway.http import jwks
from gateway.http.bodies import path_id
from gateway.keys import COUNTER, DELIVER, EVENTS, FETCHER, METRICS, SESSIONS, SETTINGS
from gateway.operators import logins
from gateway.operators.approvals import ApprovalDeps, Decision, decide_held
from gateway.operators.reasons import check_reason
from gateway.tools.mcp_actions import McpActions
from gateway.tools.runner import ActionRunner


def approval_deps(app: web.Application) -> ApprovalDeps:
    """What a decision needs, from the app's resources; the runner is the answer step's kind
    (the same fetcher, signer and environment), so an approved write goes out as a confirmed
    one would."""
    fetcher = app[FETCHER]
    runner = ActionRunner(
        fetcher,
        app[jwks.SIGNER],
        os.environ,
        app[COUNTER],
        mcp=McpActions(fetcher, os.environ),
    )
    return ApprovalDeps(
        sessions=app[SESSIONS],
        counter=app[COUNTER],
        deliverer=app[DELIVER],
        runner=runner,
        events=app[EVENTS],
        metrics=app[METRICS],
        region=app[SETTINGS].default_region,
    )


@console
async def decide_action(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await request.post()  # cached by aiohttp after the CSRF check read it
    reason = check_reason(form_text(form, "reason"))
    conversation_id = path_id(request, "conversation_id")
    decision: Decision = "approve" if request.match_info["decision"] == "approve" else "reject"
    decided = await decide_held(
        approval_deps(request.app),
        conversation_id,
        path_id(request, "held_id"),
        decision,
        actor=login.username,
        reason=reason,
    )
    return redirect(f"/console/conversations/{conversation_id}?done={quote(decided.notice)}")


def add_routes(app: web.Application) -> None:
    app.router.add_post(
        "/console/conversations/{conversation_id}/actions/{held_id}/{decision:approve|reject}",
        decide_action,
    )
