"""`POST /v1/operator/conversations/{id}/assign`: assign a conversation to an operator (the
caller or a teammate, an account that may log in) or unassign it; audited with its actor and
reason. The inbox's "Mine" view follows it."""

from __future__ import annotations

from aiohttp import web
from pydantic import Field

from gateway.api.operator_bodies import Decision
from gateway.api.operator_sends import conversation_path
from gateway.http.bodies import path_id, read_json
from gateway.http.errors import BadRequest, NotFound
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.operators.actor import operator_actor
from gateway.storage.repositories import assignments, audit, conversations, operators
from gateway.turns.handoff import AUDIT_SUBJECT


class AssignIn(Decision):
    """`operator`: the username to assign the conversation to; null unassigns it."""

    operator: str | None = Field(None, min_length=1, max_length=200)


async def assign(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, AssignIn)
    actor = who or body.actor
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS].begin() as session:
        if await conversations.get(session, conversation_id) is None:
            raise NotFound("no such conversation")
        if body.operator is not None:
            account = await operators.operator_by_username(session, body.operator)
            if account is None or account.disabled:
                raise BadRequest("no operator may log in by that name", code="unknown_operator")
        previous = await assignments.assigned_to(session, conversation_id)
        if previous != body.operator:
            await assignments.assign(session, conversation_id, body.operator, by=actor)
            await audit.record_audit(
                session,
                actor=actor,
                action="conversation.assigned" if body.operator else "conversation.unassigned",
                reason=body.reason,
                subject_type=AUDIT_SUBJECT,
                subject_id=conversation_id,
                details={"operator": body.operator, "previous_operator": previous},
            )
    return web.json_response(
        {"id": conversation_id, "assigned_to": body.operator, "previous_assigned_to": previous}
    )


document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/assign",
    "Assign a conversation to an operator (`operator`: a username; null unassigns); audited",
    body=AssignIn,
    parameters=conversation_path(),
    responses={
        200: "assigned (or unassigned)",
        400: "malformed, or no operator may log in by that name",
        404: "no such conversation",
    },
)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/operator/conversations/{conversation_id}/assign", assign)
