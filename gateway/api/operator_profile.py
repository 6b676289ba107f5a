"""The operator JSON API behind the console's profile actions (search, fact corrections, pins,
retractions, memory rebuild, context preview).

Same authentication as the rest of `/v1/operator`: the Bearer API key (the body's `actor` acts)
or a console login (cookie, `X-CSRF-Token` on POSTs; the operator's username acts).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.operator_bodies import Decision, audit_json
from gateway.http.bodies import path_id, query_text, read_json
from gateway.http.ids import MAX_STORAGE_ID, storage_id
from gateway.http.openapi import document
from gateway.http.tenant import tenant_of
from gateway.keys import COUNTER, MEMORY, SESSIONS, SETTINGS
from gateway.operators import facts, preview, search
from gateway.operators.actor import operator_actor
from gateway.operators.rebuild import rebuild_memory
from gateway.storage.errors import RecordNotFound
from gateway.storage.records import FactRecord
from gateway.storage.repositories import customers


class CorrectionIn(Decision):
    value: str = Field(min_length=1, max_length=10_000)


class PreviewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    identity_id: str = Field(min_length=1, description="a channel identity of the customer")
    message: str = Field(min_length=1, max_length=100_000)


def fact_json(fact: FactRecord) -> dict[str, Any]:
    return {
        "id": fact.id,
        "key": fact.key,
        "value": fact.value,
        "scope": fact.scope,
        "confidence": fact.confidence,
        "confirmed": fact.confirmed,
        "pinned": fact.pinned,
        "retracted": fact.retracted,
        "superseded_by": fact.superseded_by,
        "source_message_id": fact.source_message_id,
        "source_channel": fact.source_channel,
        "tags": list(fact.tags),
    }


def _fact_id(request: web.Request) -> int:
    found = storage_id(request.match_info["fact_id"])
    if found is None:
        raise RecordNotFound("no such fact")
    return found


async def search_customers(request: web.Request) -> web.Response:
    await operator_actor(request)
    async with request.app[SESSIONS]() as session:
        hits = await search.search_customers(session, query_text(request, "q") or "")
    return web.json_response(
        {
            "customers": [
                {"id": h.customer_id, "display_name": h.display_name, "identities": h.identities}
                for h in hits
            ]
        }
    )


async def fact_history(request: web.Request) -> web.Response:
    await operator_actor(request)
    customer_id = path_id(request, "customer_id")
    async with request.app[SESSIONS]() as session:
        await customers.get_customer(session, customer_id)
        rows = await facts.all_facts(session, customer_id)
    return web.json_response({"facts": [fact_json(f) for f in rows]})


async def correct(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, CorrectionIn)
    async with request.app[SESSIONS].begin() as session:
        new, entry = await facts.correct_fact(
            session,
            request.app[COUNTER],
            path_id(request, "customer_id"),
            _fact_id(request),
            body.value,
            actor=who or body.actor,
            reason=body.reason,
        )
    return web.json_response({"fact": fact_json(new), "audit": audit_json(entry)})


async def change(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    async with request.app[SESSIONS].begin() as session:
        fact, entry = await facts.set_fact_state(
            session,
            path_id(request, "customer_id"),
            _fact_id(request),
            request.match_info["change"],
            actor=who or body.actor,
            reason=body.reason,
        )
    return web.json_response({"fact": fact_json(fact), "audit": audit_json(entry)})


async def rebuild(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    result = await rebuild_memory(
        request.app[SESSIONS],
        request.app[MEMORY],
        path_id(request, "customer_id"),
        actor=who or body.actor,
        reason=body.reason,
    )
    return web.json_response(result)


async def context_preview(request: web.Request) -> web.Response:
    await operator_actor(request)
    body = await read_json(request, PreviewIn)
    async with request.app[SESSIONS]() as session:
        identity, resolved = await preview.preview_identity(
            session,
            path_id(request, "customer_id"),
            body.identity_id,
            tenant=tenant_of(request),
            region=request.app[SETTINGS].default_region,
        )
        assembled = await preview.preview_context(
            session, request.app[COUNTER], resolved, body.message, tenant=tenant_of(request)
        )
    return web.json_response(
        {
            "identity": identity.external_id,
            "link_level": identity.link_level,
            "allowed_scopes": sorted(resolved.allowed_scopes),
            "messages": assembled.window.messages_as_dicts(),
            "report": assembled.window.report.to_dict(),
        }
    )


_AUTH_NOTE = " (Bearer API key, or a console login with X-CSRF-Token on POSTs)"
_CUSTOMER = [{"name": "customer_id", "in": "path", "required": True, "schema": {"type": "string"}}]
_FACT = _CUSTOMER + [
    {
        "name": "fact_id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_STORAGE_ID},
    }
]

document(
    "GET",
    "/v1/operator/customers",
    "Search customers by phone, e-mail, name or id (`?q=`)" + _AUTH_NOTE,
    # Without `q` (or with an empty one) the answer is an empty list, not an error.
    parameters=[{"name": "q", "in": "query", "required": False, "schema": {"type": "string"}}],
    responses={200: "matching customers"},
)
document(
    "GET",
    "/v1/operator/customers/{customer_id}/facts",
    "Every fact row of the customer, superseded and retracted ones included" + _AUTH_NOTE,
    parameters=_CUSTOMER,
    responses={200: "facts", 404: "unknown customer"},
)
document(
    "POST",
    "/v1/operator/customers/{customer_id}/facts/{fact_id}/correct",
    "Correct a fact: a new confirmed fact sourced to an operator note supersedes it" + _AUTH_NOTE,
    body=CorrectionIn,
    parameters=_FACT,
    responses={200: "new fact and audit entry", 400: "malformed or unchanged", 404: "unknown"},
)
for _change in ("pin", "unpin", "retract"):
    document(
        "POST",
        f"/v1/operator/customers/{{customer_id}}/facts/{{fact_id}}/{_change}",
        f"{_change.capitalize()} a fact" + _AUTH_NOTE,
        body=Decision,
        parameters=_FACT,
        responses={200: "fact and audit entry", 400: "malformed", 404: "unknown"},
    )
document(
    "POST",
    "/v1/operator/customers/{customer_id}/rebuild",
    "Redo the customer's summaries and facts from the raw messages (pinned facts kept)"
    + _AUTH_NOTE,
    body=Decision,
    parameters=_CUSTOMER,
    responses={200: "what was rebuilt", 400: "malformed", 404: "unknown customer"},
)
document(
    "POST",
    "/v1/operator/customers/{customer_id}/context-preview",
    "The window and budget report a message from one of the customer's identities would get"
    + _AUTH_NOTE,
    body=PreviewIn,
    parameters=_CUSTOMER,
    responses={200: "window and report", 404: "unknown customer or identity"},
)


def add_routes(app: web.Application) -> None:
    """Only through `gateway.api.operator.add_routes`, which registers all of `/v1/operator`."""
    base = "/v1/operator/customers/{customer_id}"
    app.router.add_get("/v1/operator/customers", search_customers)
    app.router.add_get(base + "/facts", fact_history)
    app.router.add_post(base + "/facts/{fact_id}/correct", correct)
    app.router.add_post(base + "/facts/{fact_id}/{change:pin|unpin|retract}", change)
    app.router.add_post(base + "/rebuild", rebuild)
    app.router.add_post(base + "/context-preview", context_preview)
