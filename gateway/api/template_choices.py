"""`GET /v1/operator/conversations/{id}/templates`: the tenant's WhatsApp templates with their
variables pre-filled from the customer's facts (or their fixed "=text"), for the console's
template picker; a variable with no fact comes empty, for the operator to fill in. Sending
goes through `POST …/template` (`conversation_templates`)."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from gateway.api.canned_replies import settings_and_facts
from gateway.api.operator_sends import conversation_path
from gateway.http.openapi import document
from gateway.tenants import WhatsAppTemplateSettings
from identity.service_window import LITERAL_PREFIX


def prefilled(spec: WhatsAppTemplateSettings, known: Mapping[str, str]) -> dict[str, str]:
    """Each placeholder's value: its fixed text, the fact it names, or "" (unknown)."""
    values: dict[str, str] = {}
    for placeholder, source in spec.variables.items():
        if source.startswith(LITERAL_PREFIX):
            values[placeholder] = source[len(LITERAL_PREFIX) :]
        else:
            values[placeholder] = known.get(source, "")
    return values


async def read_templates(request: web.Request) -> web.Response:
    settings, known = await settings_and_facts(request)
    found = [
        {"name": name, "variables": prefilled(spec, known)}
        for name, spec in sorted(settings.whatsapp_templates.items())
    ]
    return web.json_response({"templates": found})


document(
    "GET",
    "/v1/operator/conversations/{conversation_id}/templates",
    "The tenant's WhatsApp templates for this conversation, variables pre-filled from the "
    "customer's facts (empty where the customer has none)",
    parameters=conversation_path(),
    responses={200: "the templates", 404: "no such conversation"},
)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/operator/conversations/{conversation_id}/templates", read_templates)
