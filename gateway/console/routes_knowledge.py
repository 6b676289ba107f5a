"""`/console/knowledge`: every tenant's knowledge documents, for any operator (read only)."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from gateway.console.pages import console, html_response
from gateway.console.views_knowledge import knowledge_page
from gateway.keys import SESSIONS
from gateway.operators.logins import OperatorLogin
from gateway.storage.repositories import knowledge

# A page, not an export: the newest documents first, this many at most.
DOCUMENTS_SHOWN: Final = 500


@console
async def documents(request: web.Request, login: OperatorLogin) -> web.StreamResponse:
    async with request.app[SESSIONS]() as session:
        listed = await knowledge.list_documents(session, None, limit=DOCUMENTS_SHOWN)
    return html_response(knowledge_page(login, listed))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/console/knowledge", documents)
