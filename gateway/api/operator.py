"""Operator API for identities: pending links, merge, split, audit log; `add_routes` also
registers the console's profile actions (`operator_profile`), so this package alone serves
`/v1/operator`.

Callers authenticate with the Bearer API key (the body's `actor` says who acts) or with a
console login (cookie, plus `X-CSRF-Token` on POSTs; the operator's username is the actor).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import Field

from gateway.api import customer_data, operator_accounts, operator_profile
from gateway.api.operator_bodies import Decision, audit_json
from gateway.customers import operator_actions as operator_store
from gateway.http.bodies import path_id, query_text, read_json
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.operators.actor import operator_actor
from gateway.storage.records import PendingLinkRecord
from gateway.storage.repositories import audit, customers, facts

# The shared body and answer shape live in `operator_bodies` (`operator_profile` uses them too).
__all__ = ["Decision", "MergeIn", "SplitIn", "add_routes", "audit_json", "pending_json"]


class MergeIn(Decision):
    source_customer_id: str = Field(min_length=1)
    target_customer_id: str = Field(min_length=1)


class SplitIn(Decision):
    identities: list[str] = Field(min_length=1, description="external ids, e.g. telegram:123")


def pending_json(link: PendingLinkRecord) -> dict[str, Any]:
    return {
        "id": link.id,
        "identity_id": link.identity_id,
        "target_customer_id": link.target_customer_id,
        "identifier": {"kind": link.identifier_kind, "value": link.identifier_value},
        "claimed_level": link.claimed_level,
        "reason": link.reason,
        "status": link.status,
        "created_at": link.created_at.isoformat(),
    }


async def list_pending(request: web.Request) -> web.Response:
    await operator_actor(request)
    async with request.app[SESSIONS]() as session:
        links = await operator_store.list_pending_links(
            session, customer_id=query_text(request, "customer_id")
        )
    return web.json_response({"pending_links": [pending_json(link) for link in links]})


async def confirm_pending(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    async with request.app[SESSIONS].begin() as session:
        entry = await operator_store.confirm_pending_link(
            session, path_id(request, "link_id"), actor=who or body.actor, reason=body.reason
        )
    return web.json_response(audit_json(entry))


async def reject_pending(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, Decision)
    async with request.app[SESSIONS].begin() as session:
        entry = await operator_store.reject_pending_link(
            session, path_id(request, "link_id"), actor=who or body.actor, reason=body.reason
        )
    return web.json_response(audit_json(entry))


async def merge(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, MergeIn)
    async with request.app[SESSIONS].begin() as session:
        entry = await operator_store.merge_customers(
            session,
            body.source_customer_id,
            body.target_customer_id,
            actor=who or body.actor,
            reason=body.reason,
        )
    return web.json_response(audit_json(entry))


async def split(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, SplitIn)
    async with request.app[SESSIONS].begin() as session:
        new_customer, entry = await operator_store.split_customer(
            session,
            path_id(request, "customer_id"),
            body.identities,
            actor=who or body.actor,
            reason=body.reason,
        )
    return web.json_response({"new_customer_id": new_customer, "audit": audit_json(entry)})


async def read_audit(request: web.Request) -> web.Response:
    await operator_actor(request)
    async with request.app[SESSIONS]() as session:
        entries = await audit.list_audit(
            session,
            subject_id=query_text(request, "subject_id"),
            action=query_text(request, "action"),
        )
    return web.json_response({"audit": [audit_json(entry) for entry in entries]})


async def customer_profile(request: web.Request) -> web.Response:
    await operator_actor(request)
    customer_id = path_id(request, "customer_id")
    async with request.app[SESSIONS]() as session:
        customer = await customers.get_customer(session, customer_id)
        identities = await customers.list_identities(session, customer_id)
        identifiers = await customers.identifiers_of(session, customer_id)
        current = await facts.current_facts(session, customer_id)
    return web.json_response(
        {
            "id": customer.id,
            "display_name": customer.display_name,
            "identities": [
                {
                    "id": i.id,
                    "channel": i.channel,
                    "external_id": i.external_id,
                    "link_level": i.link_level,
                    "evidence": i.evidence,
                }
                for i in identities
            ],
            "identifiers": [
                {"kind": i.kind, "value": i.value, "link_level": i.link_level} for i in identifiers
            ],
            "facts": [
                {
                    "id": f.id,
                    "key": f.key,
                    "value": f.value,
                    "scope": f.scope,
                    "confirmed": f.confirmed,
                    "source_message_id": f.source_message_id,
                    "source_channel": f.source_channel,
                }
                for f in current
            ],
        }
    )


def _path(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}]


def _query(*names: str) -> list[dict[str, Any]]:
    return [
        {"name": n, "in": "query", "required": False, "schema": {"type": "string"}} for n in names
    ]


document(
    "GET",
    "/v1/operator/pending-links",
    "Pending identity links (of one customer with `?customer_id=`)",
    parameters=_query("customer_id"),
    responses={200: "links"},
)
document(
    "POST",
    "/v1/operator/pending-links/{link_id}/confirm",
    "Confirm a pending link (merges into the candidate, identity becomes verified)",
    body=Decision,
    parameters=_path("link_id"),
    responses={200: "audit entry", 400: "malformed", 404: "no such pending link", 409: "conflict"},
)
document(
    "POST",
    "/v1/operator/pending-links/{link_id}/reject",
    "Reject a pending link",
    body=Decision,
    parameters=_path("link_id"),
    responses={200: "audit entry", 400: "malformed", 404: "no such pending link"},
)
document(
    "POST",
    "/v1/operator/customers/merge",
    "Merge one customer into another",
    body=MergeIn,
    responses={200: "audit entry", 400: "malformed", 404: "unknown", 409: "conflict"},
)
document(
    "POST",
    "/v1/operator/customers/{customer_id}/split",
    "Split identities (and all they brought) off to a new customer",
    body=SplitIn,
    parameters=_path("customer_id"),
    responses={200: "new customer and audit", 400: "malformed", 404: "unknown", 409: "conflict"},
)
document(
    "GET",
    "/v1/operator/customers/{customer_id}",
    "Unified profile",
    parameters=_path("customer_id"),
    responses={200: "profile", 404: "unknown customer"},
)
document(
    "GET",
    "/v1/operator/audit",
    "The audit log, newest first (filtered by `subject_id` and `action`)",
    parameters=_query("subject_id", "action"),
    responses={200: "entries"},
)


def add_routes(app: web.Application) -> None:
    """Register every `/v1/operator` route: these identity actions, then the console's profile
    actions (`gateway.api.operator_profile`), customer data export and erasure
    (`gateway.api.customer_data`) and console accounts (`gateway.api.operator_accounts`)."""
    app.router.add_get("/v1/operator/pending-links", list_pending)
    app.router.add_post("/v1/operator/pending-links/{link_id}/confirm", confirm_pending)
    app.router.add_post("/v1/operator/pending-links/{link_id}/reject", reject_pending)
    app.router.add_post("/v1/operator/customers/merge", merge)
    app.router.add_post("/v1/operator/customers/{customer_id}/split", split)
    app.router.add_get("/v1/operator/customers/{customer_id}", customer_profile)
    app.router.add_get("/v1/operator/audit", read_audit)
    operator_profile.add_routes(app)
    customer_data.add_routes(app)
    operator_accounts.add_routes(app)
