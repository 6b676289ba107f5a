"""`/console/settings`: one level of tenant settings edited in a form generated from the schema,
reviewed (every key before and after, or the keys that cannot be used) and then saved, audited
and announced like a change through `/v1/settings`. Admins only: an agent gets a 403 page."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from aiohttp import web

from gateway.console.pages import Form, console, form_text, html_response, redirect
from gateway.console.views_settings_page import level_query, review_page, settings_page
from gateway.http.errors import BadRequest, Conflict, NotFound, Unprocessable
from gateway.keys import REDIS, SESSIONS
from gateway.operators.actor import require_admin
from gateway.operators.logins import OperatorLogin
from gateway.operators.reasons import check_reason
from gateway.settings_admin.documents import Document, SettingsInvalid, changes, copy_document
from gateway.settings_admin.form import form_fields, read_form
from gateway.settings_admin.levels import LevelInvalid, SettingsLevel
from gateway.settings_admin.service import change_level, check_level, read_level


def _level(values: Mapping[str, Any]) -> SettingsLevel:
    def text(name: str) -> str | None:
        value = values.get(name)
        return value.strip() or None if isinstance(value, str) else None

    try:
        return SettingsLevel(
            domain=text("domain") or "default",
            host=text("host"),
            assistant_id=text("assistant"),
            channel=text("channel"),
        )
    except LevelInvalid as exc:
        raise NotFound(str(exc), code="unknown_level") from exc


def _submitted(form: Form) -> dict[str, str]:
    return {key: value for key, value in form.items() if isinstance(value, str)}


@console
async def show(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)
    level = _level(request.query)
    async with request.app[SESSIONS]() as session:
        stored = await read_level(session, level)
    notice = request.query.get("done")
    return html_response(settings_page(login, level, form_fields(), stored, notice=notice))


@console
async def review(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)
    form = await request.post()
    level = _level(form)
    fields = form_fields()
    document, unreadable = read_form(fields, _submitted(form))
    async with request.app[SESSIONS]() as session:
        stored = await read_level(session, level)
        if level.channel is None and "channels" in stored:
            document["channels"] = stored["channels"]  # edited on the channel levels
        problems = unreadable
        if not problems:
            try:
                await check_level(session, level, document)
            except SettingsInvalid as exc:
                problems = exc.problems
    if problems:
        page = settings_page(
            login, level, fields, stored, submitted=_submitted(form), problems=problems
        )
        return html_response(page, status=422)
    return html_response(review_page(login, level, changes(stored, document), document, stored))


def _document(form: Form, name: str) -> Document:
    try:
        value = json.loads(form_text(form, name))
    except ValueError as exc:
        raise BadRequest(f"{name} is not JSON", code="malformed") from exc
    if not isinstance(value, dict):
        raise BadRequest(f"{name} is not a table of settings", code="malformed")
    return value


@console
async def save(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)
    form = await request.post()
    level = _level(form)
    reason = check_reason(form_text(form, "reason"))
    document, base = _document(form, "document"), _document(form, "base")

    def edit(stored: Document) -> Document:
        if stored != base:  # another change landed after the review: review it again
            raise Conflict("the settings changed since the review; review again", code="stale")
        return copy_document(document)

    try:
        done = await change_level(
            request.app[SESSIONS],
            request.app.get(REDIS),
            level,
            edit,
            actor=login.username,
            reason=reason,
        )
    except SettingsInvalid as exc:
        raise Unprocessable(str(exc), code="invalid_settings") from exc
    keys = ", ".join(change.key for change in done.changed) or "nothing"
    return redirect(f"/console/settings?{level_query(level)}&done={quote(f'saved: {keys}')}")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/console/settings", show)
    app.router.add_post("/console/settings/review", review)
    app.router.add_post("/console/settings/save", save)
