"""The operator API for customer data (LGPD art. 18 / GDPR art. 15 and 17): export a customer,
erase a customer, one episode or one message.

Same authentication as the rest of `/v1/operator`: the Bearer API key (the body's `actor`, or
`?actor=` on the export, acts) or a console login (cookie, `X-CSRF-Token` on DELETEs; the
operator's username acts). Only an admin erases: an agent's login is refused (403 `admin_only`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.api.operator_bodies import Decision, audit_json
from gateway.customers import erasure
from gateway.customers.erasure import Erased
from gateway.customers.export import export_customer
from gateway.http.bodies import path_id, query_text, read_json
from gateway.http.ids import MAX_STORAGE_ID, storage_id
from gateway.http.openapi import document
from gateway.keys import MEMORY, SESSIONS
from gateway.operators.actor import operator_actor
from gateway.operators.customer_data import DEFAULT_EXPORT_REASON, after_commit
from gateway.storage.errors import RecordNotFound


def erased_json(done: Erased) -> dict[str, Any]:
    return {
        "customer_ids": list(done.customer_ids),
        "removed": done.counts,
        "redis_keys_deleted": done.redis_keys,
        "summaries_rebuilt_from_messages": done.summaries_rebuilt,
        "audit": audit_json(done.audit),
    }


async def export(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    document_ = await export_customer(
        request.app[SESSIONS],
        path_id(request, "customer_id"),
        actor=who or query_text(request, "actor") or "api",
        reason=query_text(request, "reason") or DEFAULT_EXPORT_REASON,
    )
    return web.json_response(
        document_,
        headers={"Content-Disposition": 'attachment; filename="customer-export.json"'},
    )


async def erase_customer(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)
    body = await read_json(request, Decision)
    done = await erasure.erase_customer(
        request.app[SESSIONS],
        after_commit(request.app),
        path_id(request, "customer_id"),
        actor=who or body.actor,
        reason=body.reason,
    )
    return web.json_response(erased_json(done))


async def erase_message(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)
    message_id = storage_id(request.match_info["message_id"])
    if message_id is None:
        raise RecordNotFound("no such message")
    body = await read_json(request, Decision)
    done = await erasure.erase_message(
        request.app[SESSIONS],
        request.app[MEMORY],
        after_commit(request.app),
        message_id,
        actor=who or body.actor,
        reason=body.reason,
    )
    return web.json_response(erased_json(done))


async def erase_episode(request: web.Request) -> web.Response:
    who = await operator_actor(request, admin_only=True)
    body = await read_json(request, Decision)
    done = await erasure.erase_episode(
        request.app[SESSIONS],
        request.app[MEMORY],
        after_commit(request.app),
        path_id(request, "episode_id"),
        actor=who or body.actor,
        reason=body.reason,
    )
    return web.json_response(erased_json(done))


_AUTH_NOTE = " (Bearer API key, or a console login with X-CSRF-Token on DELETEs)"
_ADMIN_NOTE = "; an agent's login is refused (403 admin_only)"


_ERASE_RESPONSES = {
    200: "rows removed",
    400: "malformed",
    401: "no credentials",
    403: "an agent's login, or no CSRF header",
    404: "unknown",
}


def _path(name: str, schema: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": schema or {"type": "string"}}]


document(
    "GET",
    "/v1/operator/customers/{customer_id}/export",
    "Everything held about the customer as one JSON document (a merged-away id exports the"
    " customer it became, with everyone merged into it); audited as customer.exported" + _AUTH_NOTE,
    parameters=_path("customer_id")
    + [
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
        for name in ("reason", "actor")
    ],
    responses={200: "the export document", 401: "no credentials", 404: "unknown customer"},
)
document(
    "DELETE",
    "/v1/operator/customers/{customer_id}",
    "Erase the customer (and everyone merged into it) everywhere; a tombstone audit row"
    " without personal data remains" + _AUTH_NOTE + _ADMIN_NOTE,
    body=Decision,
    parameters=_path("customer_id"),
    responses=_ERASE_RESPONSES,
)
document(
    "DELETE",
    "/v1/operator/messages/{message_id}",
    "Erase one message (every version), the facts and summary sentences derived from it;"
    " its episode's summary is rebuilt" + _AUTH_NOTE + _ADMIN_NOTE,
    body=Decision,
    parameters=_path("message_id", {"type": "integer", "minimum": 1, "maximum": MAX_STORAGE_ID}),
    responses=_ERASE_RESPONSES,
)
document(
    "DELETE",
    "/v1/operator/episodes/{episode_id}",
    "Erase one episode (a chat session, a call with every transcript version) and what was"
    " derived from it" + _AUTH_NOTE + _ADMIN_NOTE,
    body=Decision,
    parameters=_path("episode_id"),
    responses=_ERASE_RESPONSES,
)


def add_routes(app: web.Application) -> None:
    """Only through `gateway.api.operator.add_routes`, which registers all of `/v1/operator`."""
    # No HEAD: every export is audited, a HEAD would audit one nobody received.
    app.router.add_get("/v1/operator/customers/{customer_id}/export", export, allow_head=False)
    app.router.add_delete("/v1/operator/customers/{customer_id}", erase_customer)
    app.router.add_delete("/v1/operator/messages/{message_id}", erase_message)
    app.router.add_delete("/v1/operator/episodes/{episode_id}", erase_episode)
