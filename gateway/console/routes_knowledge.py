"""`/console/knowledge`: every tenant's knowledge documents, for any operator; an admin may
read a URL document again now ("Sync now", `gateway.knowledge.sync`)."""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

from aiohttp import web

from gateway.api.knowledge import knowledge_sync
from gateway.console.pages import console, form_text, html_response, redirect
from gateway.console.views_knowledge import knowledge_page
from gateway.http.bodies import path_id
from gateway.http.errors import NotFound, Unprocessable
from gateway.keys import SESSIONS
from gateway.operators.actor import require_admin
from gateway.operators.logins import OperatorLogin
from gateway.storage.repositories import knowledge

# A page, not an export: the newest documents first, this many at most.
DOCUMENTS_SHOWN: Final = 500


@console
async def documents(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    async with request.app[SESSIONS]() as session:
        listed = await knowledge.list_documents(session, None, limit=DOCUMENTS_SHOWN)
    notice = request.query.get("done")
    return html_response(knowledge_page(login, listed, notice=notice))


@console
async def sync_now(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    require_admin(login)  # what the bot tells: admins
    form = await request.post()  # cached by aiohttp after the CSRF check read it
    try:
        synced = await knowledge_sync(request).sync_document(
            tenant=form_text(form, "tenant"),
            document_id=path_id(request, "document_id"),
            actor=login.username,
        )
    except LookupError as exc:
        raise Unprocessable(str(exc), code="not_a_url_document") from exc
    if synced is None:
        raise NotFound("no such document")
    notice = f"{synced.url}: {synced.outcome.replace('_', ' ')}"
    if synced.error:
        notice += f" ({synced.error})"
    return redirect(f"/console/knowledge?done={quote(notice)}")


def add_routes(app: web.Application) -> None:
    app.router.add_get("/console/knowledge", documents)
    app.router.add_post("/console/knowledge/{document_id}/sync", sync_now)
