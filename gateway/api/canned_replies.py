"""`GET /v1/operator/conversations/{id}/canned-replies`: the tenant's canned replies with their
`{name}`-style placeholders filled from the customer's current facts, for the console's reply
box. A placeholder with no fact stays in the text, visibly unfilled, and is listed under
`unfilled` (the box refuses to send until it is edited away)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gateway.api.operator_sends import conversation_path
from gateway.http.bodies import path_id
from gateway.http.errors import NotFound
from gateway.http.openapi import document
from gateway.keys import SESSIONS
from gateway.operators.actor import operator_actor
from gateway.storage.repositories import conversations, tenants
from gateway.tenants import TenantSettings
from gateway.turns.service_window import fact_values

PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


@dataclass(frozen=True, slots=True)
class FilledReply:
    shortcut: str
    text: str
    unfilled: tuple[str, ...]


def fill_placeholders(shortcut: str, text: str, known: Mapping[str, str]) -> FilledReply:
    """`{key}` replaced by the fact `key`; unknown ones left as they are, and named."""
    missing: list[str] = []

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in known:
            return known[key]
        if key not in missing:
            missing.append(key)
        return match.group(0)

    return FilledReply(shortcut, PLACEHOLDER.sub(value, text), tuple(missing))


def _json(reply: FilledReply) -> dict[str, Any]:
    return {"shortcut": reply.shortcut, "text": reply.text, "unfilled": list(reply.unfilled)}


async def settings_and_facts(request: web.Request) -> tuple[TenantSettings, dict[str, str]]:
    """The path's conversation's settings and its customer's facts in force, for an operator
    (what the reply box's canned replies and template picker are filled from)."""
    await operator_actor(request)
    conversation_id = path_id(request, "conversation_id")
    async with request.app[SESSIONS]() as session:
        conversation = await conversations.get(session, conversation_id)
        if conversation is None:
            raise NotFound("no such conversation")
        settings = await tenants.settings_for(
            session, conversation.tenant, channel=conversation.channel
        )
        known = await fact_values(session, conversation.customer_id)
    return settings, known


async def read_canned_replies(request: web.Request) -> web.Response:
    settings, known = await settings_and_facts(request)
    replies = [fill_placeholders(c.shortcut, c.text, known) for c in settings.canned_replies]
    return web.json_response({"replies": [_json(reply) for reply in replies]})


document(
    "GET",
    "/v1/operator/conversations/{conversation_id}/canned-replies",
    "The tenant's canned replies for this conversation, placeholders filled from the "
    "customer's facts (the ones with no fact left in the text and listed as `unfilled`)",
    parameters=conversation_path(),
    responses={200: "the canned replies", 404: "no such conversation"},
)


def add_routes(app: web.Application) -> None:
    app.router.add_get(
        "/v1/operator/conversations/{conversation_id}/canned-replies", read_canned_replies
    )
