"""`/console`: the operator console pages and form actions.

Every page is wrapped by `pages.console` (a login, and the CSRF token on form POSTs); the
login and logout routes are `routes_login`. The actions themselves are `gateway.operators`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final
from urllib.parse import quote

from aiohttp import web

from gateway.console import (
    conversations_stream,
    customer_data,
    routes_accounts,
    routes_approvals,
    routes_knowledge,
    routes_login,
    routes_reports,
    routes_settings,
    views,
)
from gateway.console.pages import Form, console, form_text, html_response, redirect
from gateway.console.views_settings import effective_settings_section
from gateway.customers import operator_actions as operator_store
from gateway.http.bodies import path_id
from gateway.http.errors import BadRequest, NotFound
from gateway.http.ids import storage_id
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, INBOX_READY, MEMORY, SESSIONS, SETTINGS
from gateway.operators import action_history, facts, held_actions, logins, preview, search
from gateway.operators.profile import load_profile
from gateway.operators.reasons import check_reason
from gateway.operators.rebuild import rebuild_memory
from gateway.operators.set_aside import retry_set_aside
from gateway.runtime.clock import utcnow
from gateway.settings_admin.levels import SettingsLevel
from gateway.storage.errors import RecordNotFound
from gateway.storage.repositories import audit, conversations, inbox, messages
from gateway.storage.repositories.tenants import settings_for
from gateway.tenants import TenantConfigError, TenantSettings

STATIC_DIR: Final = Path(__file__).parent / "static"
ASSETS: Final = {
    "console.css": "text/css; charset=utf-8",
    "conversations.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


def _back(customer_id: str, notice: str) -> web.Response:
    return redirect(f"/console/customers/{customer_id}?done={quote(notice)}")


@console
async def home(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    """Who is talking now; with `q`, the customers that match it."""
    query = request.query.get("q", "")
    if "q" not in request.query:
        async with request.app[SESSIONS]() as session:
            approvals = await held_actions.waiting_approvals(session, utcnow())
        return html_response(views.conversations_page(login, approvals))
    async with request.app[SESSIONS]() as session:
        hits = await search.search_customers(session, query) if query.strip() else None
        pending = await operator_store.list_pending_links(session)
    return html_response(views.search_page(login, query, hits, len(pending)))


@console
async def profile(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    async with request.app[SESSIONS]() as session:
        loaded = await load_profile(session, request.match_info["customer_id"])
        calls = await action_history.recent_calls(session, loaded.customer.id)
    return html_response(views.profile_page(login, loaded, request.query.get("done"), calls))


@console
async def message(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    message_id = storage_id(request.match_info["message_id"])
    if message_id is None:
        raise RecordNotFound("no such message")
    async with request.app[SESSIONS]() as session:
        found = await messages.get_message(session, request.match_info["customer_id"], message_id)
        turn = await action_history.turn_trace(session, found.id) if found.role == "user" else None
    return html_response(views.message_page(login, found, turn))


async def _form(request: web.Request) -> Form:
    return await request.post()  # cached by aiohttp after the CSRF check read it


@console
async def decide_link(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    reason = check_reason(form_text(form, "reason"))
    customer_id = request.match_info["customer_id"]
    decide = (
        operator_store.confirm_pending_link
        if request.match_info["decision"] == "confirm"
        else operator_store.reject_pending_link
    )
    async with request.app[SESSIONS].begin() as session:
        entry = await decide(
            session, request.match_info["link_id"], actor=login.username, reason=reason
        )
    target = entry.subject_id if request.match_info["decision"] == "confirm" else customer_id
    return _back(target, f"{entry.action} recorded")


@console
async def merge(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    reason = check_reason(form_text(form, "reason"))
    target = request.match_info["customer_id"]
    async with request.app[SESSIONS].begin() as session:
        await operator_store.merge_customers(
            session,
            form_text(form, "source_customer_id").strip(),
            target,
            actor=login.username,
            reason=reason,
        )
    return _back(target, "merge recorded")


@console
async def split(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    reason = check_reason(form_text(form, "reason"))
    chosen = [value for value in form.getall("identities", []) if isinstance(value, str)]
    if not chosen:
        raise BadRequest("pick at least one identity to split off")
    async with request.app[SESSIONS].begin() as session:
        new_customer, _ = await operator_store.split_customer(
            session, request.match_info["customer_id"], chosen, actor=login.username, reason=reason
        )
    return _back(new_customer, "split recorded; this is the new customer")


@console
async def correct_fact(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    customer_id = request.match_info["customer_id"]
    async with request.app[SESSIONS].begin() as session:
        await facts.correct_fact(
            session,
            request.app[COUNTER],
            customer_id,
            _fact_id(request),
            form_text(form, "value"),
            actor=login.username,
            reason=form_text(form, "reason"),
        )
    return _back(customer_id, "fact corrected")


@console
async def change_fact(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    customer_id = request.match_info["customer_id"]
    change = request.match_info["change"]
    async with request.app[SESSIONS].begin() as session:
        await facts.set_fact_state(
            session,
            customer_id,
            _fact_id(request),
            change,
            actor=login.username,
            reason=form_text(form, "reason"),
        )
    return _back(customer_id, f"fact {change} recorded")


def _fact_id(request: web.Request) -> int:
    found = storage_id(request.match_info["fact_id"])
    if found is None:
        raise RecordNotFound("no such fact")
    return found


async def run_rebuild(
    request: web.Request, customer_id: str, *, actor: str, reason: str
) -> dict[str, int]:
    """Rebuild the customer's memory, then audit it with what was redone."""
    return await rebuild_memory(
        request.app[SESSIONS], request.app[MEMORY], customer_id, actor=actor, reason=reason
    )


@console
async def rebuild(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    customer_id = request.match_info["customer_id"]
    result = await run_rebuild(
        request, customer_id, actor=login.username, reason=form_text(form, "reason")
    )
    return _back(customer_id, f"memory rebuilt: {result['episodes']} episodes")


@console
async def export_data(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    return await customer_data.console_export(request, login)


@console
async def erase_data(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    erased = await customer_data.console_erase(
        request, login, reason=form_text(form, "reason"), confirm=form_text(form, "confirm")
    )
    # The profile is gone; its audit log shows the tombstone.
    return redirect(f"/console/audit?subject={quote(erased.audit.subject_id)}")


@console
async def erase_message(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    customer_id = request.match_info["customer_id"]
    message_id = storage_id(request.match_info["message_id"])
    if message_id is None:
        raise RecordNotFound("no such message")
    async with request.app[SESSIONS]() as session:
        await messages.get_message(session, customer_id, message_id)  # this customer's
    erased = await customer_data.console_erase_message(
        request, login, message_id, reason=form_text(form, "reason")
    )
    return _back(customer_id, f"message erased; {sum(erased.counts.values())} rows removed")


@console
async def context_preview(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    customer_id = request.match_info["customer_id"]
    text = request.query.get("message", "").strip()
    if not text:
        raise BadRequest("a sample message is required")
    async with request.app[SESSIONS]() as session:
        identity, resolved = await preview.preview_identity(
            session,
            customer_id,
            request.query.get("identity", ""),
            tenant=tenant_of(request),
            region=request.app[SETTINGS].default_region,
        )
        assembled = await preview.preview_context(
            session, request.app[COUNTER], resolved, text, tenant=tenant_of(request)
        )
    return html_response(
        views.preview_page(
            login, customer_id, identity, sorted(resolved.allowed_scopes), text, assembled.window
        )
    )


@console
async def inbox_page(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    async with request.app[SESSIONS]() as session:
        depth = await inbox.depth(session)
        items = await inbox.set_aside(session)
    return html_response(views.inbox_page(login, depth, items, request.query.get("done")))


@console
async def retry_inbox(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    form = await _form(request)
    item_id = storage_id(request.match_info["item_id"])
    if item_id is None:
        raise RecordNotFound("no such message is set aside")
    async with request.app[SESSIONS].begin() as session:
        await retry_set_aside(
            session, item_id, actor=login.username, reason=form_text(form, "reason")
        )
    request.app[INBOX_READY]()
    return redirect(f"/console/inbox?done={quote(f'message {item_id} is back in line')}")


@console
async def audit_log(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    subject = request.query.get("subject") or None
    async with request.app[SESSIONS]() as session:
        entries = await audit.list_audit(session, subject_id=subject)
    return html_response(views.audit_page(login, entries, subject))


@console
async def conversation(request: web.Request, login: logins.OperatorLogin) -> web.StreamResponse:
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS]() as session:
        found = await conversations.get(session, conversation_id)
        if found is None:
            raise NotFound("no such conversation")
        held = await held_actions.held_actions(session, found.conversation_key, utcnow())
        tenant = found.tenant
        level = SettingsLevel(tenant.domain, tenant.host, tenant.assistant_id, found.channel)
        effective: TenantSettings | None
        try:
            effective = await settings_for(session, tenant, channel=found.channel)
        except TenantConfigError:
            effective = None
    settings = effective_settings_section(level, effective)
    return html_response(
        views.conversation_page(
            login, conversation_id, held, request.query.get("done"), settings=settings
        )
    )


@console
async def conversation_changes(
    request: web.Request, login: logins.OperatorLogin
) -> web.StreamResponse:
    return await conversations_stream.stream_changes(request)


async def asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in ASSETS:
        raise web.HTTPNotFound()
    path: Path = STATIC_DIR / name
    return web.FileResponse(
        path,
        headers={
            "Content-Type": ASSETS[name],
            "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
        },
    )


async def root_redirect(request: web.Request) -> web.StreamResponse:
    return redirect("/console")


def add_routes(app: web.Application) -> None:
    router = app.router
    router.add_get("/console/", root_redirect)
    router.add_get("/console/login", routes_login.login_form)
    router.add_post("/console/login", routes_login.login_submit)
    router.add_post("/console/logout", routes_login.logout)
    router.add_get("/console", home)
    router.add_get("/console/audit", audit_log)
    router.add_get("/console/inbox", inbox_page)
    router.add_get("/console/conversations/stream", conversation_changes)
    router.add_get("/console/conversations/{conversation_id}", conversation)
    conversations_stream.add_routes(app)
    routes_approvals.add_routes(app)
    routes_accounts.add_routes(app)
    routes_settings.add_routes(app)
    routes_reports.add_routes(app)
    routes_knowledge.add_routes(app)
    router.add_post("/console/inbox/{item_id}/retry", retry_inbox)
    router.add_get("/console/static/{name}", asset)
    base = "/console/customers/{customer_id}"
    router.add_get(base, profile)
    router.add_get(base + "/messages/{message_id}", message)
    router.add_get(base + "/preview", context_preview)
    router.add_post(base + "/links/{link_id}/{decision:confirm|reject}", decide_link)
    router.add_post(base + "/merge", merge)
    router.add_post(base + "/split", split)
    router.add_post(base + "/facts/{fact_id}/correct", correct_fact)
    router.add_post(base + "/facts/{fact_id}/{change:pin|unpin|retract}", change_fact)
    router.add_post(base + "/rebuild", rebuild)
    router.add_get(base + "/export", export_data, allow_head=False)
    router.add_post(base + "/erase", erase_data)
    router.add_post(base + "/messages/{message_id}/erase", erase_message)
