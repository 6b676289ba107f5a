"""The console's customer data pages: the export download and the erasure confirmed by typing
the customer id again."""

from __future__ import annotations

import json

from aiohttp import web

from gateway.customers import erasure
from gateway.customers.erasure import Erased
from gateway.customers.export import export_customer
from gateway.http.errors import BadRequest
from gateway.keys import MEMORY, SESSIONS
from gateway.operators.actor import require_admin
from gateway.operators.customer_data import DEFAULT_EXPORT_REASON, after_commit
from gateway.operators.logins import OperatorLogin


async def console_export(request: web.Request, login: OperatorLogin) -> web.Response:
    """The export document as a download, audited with the operator as the actor."""
    customer_id = request.match_info["customer_id"]
    document = await export_customer(
        request.app[SESSIONS], customer_id, actor=login.username, reason=DEFAULT_EXPORT_REASON
    )
    return web.Response(
        text=json.dumps(document, ensure_ascii=False, indent=2),
        content_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="customer-{customer_id}.json"',
            "Cache-Control": "no-store",
        },
    )


async def console_erase(
    request: web.Request, login: OperatorLogin, *, reason: str, confirm: str
) -> Erased:
    """Erase the customer once an admin typed its id again; refused (400) otherwise, and
    (403) for an agent."""
    require_admin(login)
    customer_id = request.match_info["customer_id"]
    if confirm.strip() != customer_id:
        raise BadRequest("type the customer id to confirm the erasure", code="not_confirmed")
    return await erasure.erase_customer(
        request.app[SESSIONS],
        after_commit(request.app),
        customer_id,
        actor=login.username,
        reason=reason,
    )


async def console_erase_message(
    request: web.Request, login: OperatorLogin, message_id: int, *, reason: str
) -> Erased:
    """Erase one message (every version) and what was derived from it; only an admin."""
    require_admin(login)
    return await erasure.erase_message(
        request.app[SESSIONS],
        request.app[MEMORY],
        after_commit(request.app),
        message_id,
        actor=login.username,
        reason=reason,
    )
