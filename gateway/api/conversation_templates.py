"""`POST /v1/operator/conversations/{id}/template`: an operator sends one of the tenant's
approved WhatsApp templates (the way back to a customer outside the 24-hour window).

The variables are filled from the customer's facts as the template's settings say, the
body's `variables` overriding them; the message is stored as the operator's (its `extra`
names the template and the filled variables, so a retry sends the same), audited in the same
transaction, and delivered like any operator message.
"""

from __future__ import annotations

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.api.operator_bodies import TemplateIn
from gateway.api.operator_sends import conversation_path, operator_send_answers
from gateway.http.bodies import path_id, read_json
from gateway.http.errors import BadRequest, Conflict, NotFound
from gateway.http.openapi import document
from gateway.keys import COUNTER, DELIVER, EVENTS, SESSIONS
from gateway.operators.actor import operator_actor
from gateway.storage.message_meta import MessageMeta, TemplateUse
from gateway.storage.records import MessageRecord
from gateway.storage.repositories import audit, conversations, tenants
from gateway.turns.handoff import AUDIT_SUBJECT
from gateway.turns.operator_messages import send_operator_message
from gateway.turns.service_window import fact_values, filled
from identity.service_window import MissingVariable, has_window


def template_text(name: str, variables: dict[str, str]) -> str:
    """How a sent template reads in the conversation (its wording stays with the provider)."""
    shown = ", ".join(f"{{{{{key}}}}}={value}" for key, value in variables.items())
    return f"[WhatsApp template {name}]" + (f" {shown}" if shown else "")


async def send_template(request: web.Request) -> web.Response:
    who = await operator_actor(request)
    body = await read_json(request, TemplateIn)
    actor = who or body.actor
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS]() as session:
        conversation = await conversations.get(session, conversation_id)
        if conversation is None:
            raise NotFound("no such conversation")
        if not has_window(conversation.channel):
            raise BadRequest(
                f"templates are for WhatsApp conversations, not {conversation.channel}",
                code="not_whatsapp",
            )
        if conversation.owner != "human" or conversation.held_by != actor:
            # Checked again under the row's lock when it is stored; here so that an operator
            # who does not hold it hears that first.
            holder = conversation.held_by or conversation.owner
            raise Conflict(f"the conversation is held by {holder}, not by {actor}", code="not_held")
        # The conversation's own tenant, whichever host the operator calls through.
        tenant = await tenants.settings_for(
            session, conversation.tenant, channel=conversation.channel
        )
        settings = tenant.whatsapp_templates.get(body.name)
        if settings is None:
            raise BadRequest(f"no WhatsApp template {body.name!r}", code="unknown_template")
        try:
            variables = filled(
                settings, await fact_values(session, conversation.customer_id), body.variables
            )
        except MissingVariable as exc:
            raise BadRequest(str(exc), code="missing_variable") from exc

    async def audited(session: AsyncSession, message: MessageRecord) -> None:
        await audit.record_audit(
            session,
            actor=actor,
            action="conversation.template",
            reason=body.reason,
            subject_type=AUDIT_SUBJECT,
            subject_id=conversation_id,
            details={"message_id": message.id, "template": body.name, "variables": variables},
        )

    with operator_send_answers():
        message = await send_operator_message(
            sessions=request.app[SESSIONS],
            counter=request.app[COUNTER],
            events=request.app[EVENTS],
            deliverer=request.app[DELIVER],
            conversation_id=conversation_id,
            text=template_text(body.name, variables),
            actor=actor,
            meta=MessageMeta(template=TemplateUse(body.name, tuple(variables.items()))),
            stored=audited,
        )
    return web.json_response(
        {"message_id": message.id, "template": body.name, "variables": variables}, status=202
    )


document(
    "POST",
    "/v1/operator/conversations/{conversation_id}/template",
    "Send one of the tenant's approved WhatsApp templates as the operator holding the "
    "conversation (variables filled from the customer's facts, the body's overriding)",
    body=TemplateIn,
    parameters=conversation_path(),
    responses={
        202: "stored; being sent",
        400: "unknown template, a variable with no value, or not a WhatsApp conversation",
        404: "no such conversation",
        409: "the actor does not hold it, or the customer never wrote",
    },
)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/operator/conversations/{conversation_id}/template", send_template)
